// Package validate checks, before any call, the names and documents that
// SQS and SNS would refuse, so that setup fails with a sentence that says
// what to change instead of the service's error after part of the work is
// done. dlq.Setup, fanout.Setup and the CLI's setup and template use it.
package validate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// QueueName checks an SQS queue name: 1 to 80 characters (".fifo"
// included) of letters, digits, hyphens and underscores, and ".fifo" at
// the end exactly when fifo.
func QueueName(name string, fifo bool) error {
	return resourceName("queue", name, fifo, 80)
}

// TopicName checks an SNS topic name: 1 to 256 characters (".fifo"
// included) of letters, digits, hyphens and underscores, and ".fifo" at the
// end exactly when fifo.
func TopicName(name string, fifo bool) error {
	return resourceName("topic", name, fifo, 256)
}

func resourceName(what, name string, fifo bool, max int) error {
	base, suffix := strings.CutSuffix(name, ".fifo")
	switch {
	case base == "":
		return fmt.Errorf("%s name %q is empty: give 1 to %d letters, digits, - or _", what, name, max)
	case len(name) > max:
		return fmt.Errorf("%s name %s is %d characters long; SQS and SNS allow at most %d (\".fifo\" included): shorten it", what, name, len(name), max)
	case fifo && !suffix:
		return fmt.Errorf("%s name %s: a FIFO %s's name ends in .fifo", what, name, what)
	case !fifo && suffix:
		return fmt.Errorf("%s name %s ends in .fifo, which only a FIFO %s's may: drop the suffix or make it FIFO", what, name, what)
	}
	for _, r := range base {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("%s name %q has %q: only letters, digits, - and _ are allowed (and .fifo at the end of a FIFO %s's)", what, name, r, what)
		}
	}
	return nil
}

// FilterPolicy checks an SNS subscription filter policy's shape: a JSON
// object whose every key maps to an array of match conditions, as in
// {"order-status":["confirmed","canceled"]}; unless scope is
// "MessageAttributes" (a scope of "" may be an existing subscription's
// MessageBody), a key may also map to an object, checked the same way (the
// body's nested fields); "$or" maps to an array of such objects. It does not judge
// the conditions inside the arrays (SNS does).
func FilterPolicy(policy, scope string) error {
	var doc any
	if err := json.Unmarshal([]byte(policy), &doc); err != nil {
		return fmt.Errorf("the filter policy is not valid JSON (%v); SNS's filter policies look like {\"order-status\":[\"confirmed\",\"canceled\"]}", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok || len(obj) == 0 {
		return fmt.Errorf("the filter policy is not a JSON object with at least one key; SNS's filter policies look like {\"order-status\":[\"confirmed\",\"canceled\"]}")
	}
	return filterObject(obj, "", scope != "MessageAttributes")
}

func filterObject(obj map[string]any, path string, nested bool) error {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		where := path + k
		switch v := obj[k].(type) {
		case []any:
			if k != "$or" {
				continue
			}
			for _, e := range v {
				o, ok := e.(map[string]any)
				if !ok {
					return fmt.Errorf("the filter policy's %q must be an array of objects, each a filter policy of its own", where)
				}
				if err := filterObject(o, path, nested); err != nil {
					return err
				}
			}
		case map[string]any:
			if !nested {
				return fmt.Errorf("the filter policy's key %q maps to an object, which only a MessageBody-scoped policy may nest (--filter-policy-scope MessageBody); with MessageAttributes give an array, e.g. {%q:[\"value\"]}", where, k)
			}
			if err := filterObject(v, where+".", nested); err != nil {
				return err
			}
		default:
			b, _ := json.Marshal(v)
			return fmt.Errorf("the filter policy's key %q maps to %s, not an array: SNS refuses it; write the values as an array, e.g. {%q:[%s]}", where, b, k, b)
		}
	}
	return nil
}
