package snstest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sns/types"
)

// filterPolicy is a parsed subscription filter policy.
type filterPolicy map[string]any

// parseFilterPolicy checks a FilterPolicy attribute: a JSON object whose
// members are arrays of conditions, nested objects (body scope) or "$or".
func parseFilterPolicy(s string) (filterPolicy, error) {
	var p map[string]any
	if err := json.Unmarshal([]byte(s), &p); err != nil || p == nil {
		return nil, fmt.Errorf("FilterPolicy is not a JSON object")
	}
	if err := checkPolicy(p); err != nil {
		return nil, err
	}
	return p, nil
}

func checkPolicy(p map[string]any) error {
	for k, v := range p {
		switch c := v.(type) {
		case []any:
			if k == "$or" {
				for _, sub := range c {
					m, ok := sub.(map[string]any)
					if !ok {
						return fmt.Errorf("FilterPolicy: $or takes objects")
					}
					if err := checkPolicy(m); err != nil {
						return err
					}
				}
				continue
			}
			if len(c) == 0 {
				return fmt.Errorf("FilterPolicy: %s has an empty list of conditions", k)
			}
		case map[string]any:
			if err := checkPolicy(c); err != nil {
				return err
			}
		default:
			return fmt.Errorf("FilterPolicy: %s must be a list of conditions or an object", k)
		}
	}
	return nil
}

// attributeDocument turns message attributes into what a filter policy of
// scope MessageAttributes matches: String values as strings, Number values
// as numbers, String.Array values as arrays; Binary ones are not matched.
func attributeDocument(attrs map[string]types.MessageAttributeValue) map[string]any {
	doc := map[string]any{}
	for name, a := range attrs {
		t, v := deref(a.DataType), deref(a.StringValue)
		switch {
		case t == "String.Array":
			var arr []any
			if json.Unmarshal([]byte(v), &arr) == nil {
				doc[name] = arr
			}
		case strings.HasPrefix(t, "Number"):
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				doc[name] = f
			}
		case strings.HasPrefix(t, "String"):
			doc[name] = v
		}
	}
	return doc
}

// matches reports whether doc meets every member of the policy.
func (p filterPolicy) matches(doc map[string]any) bool { return matchObject(p, doc) }

func matchObject(p map[string]any, doc map[string]any) bool {
	for key, cond := range p {
		if key == "$or" {
			alts, _ := cond.([]any)
			ok := false
			for _, alt := range alts {
				if m, _ := alt.(map[string]any); m != nil && matchObject(m, doc) {
					ok = true
					break
				}
			}
			if !ok {
				return false
			}
			continue
		}
		val, present := doc[key]
		switch c := cond.(type) {
		case map[string]any:
			sub, ok := val.(map[string]any)
			if !ok || !matchObject(c, sub) {
				return false
			}
		case []any:
			if !matchConditions(c, val, present) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// matchConditions reports whether any condition accepts the value (any
// element of an array value).
func matchConditions(conds []any, val any, present bool) bool {
	values := []any{val}
	if arr, ok := val.([]any); ok {
		values = arr
	}
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			if want, ok := m["exists"].(bool); ok {
				if present == want {
					return true
				}
				continue
			}
		}
		if !present {
			continue
		}
		for _, v := range values {
			if matchOne(c, v) {
				return true
			}
		}
	}
	return false
}

func matchOne(cond, v any) bool {
	switch c := cond.(type) {
	case string:
		s, ok := v.(string)
		return ok && s == c
	case float64:
		f, ok := number(v)
		return ok && f == c
	case nil:
		return v == nil
	case map[string]any:
		for op, arg := range c {
			switch op {
			case "prefix":
				s, ok1 := v.(string)
				a, ok2 := arg.(string)
				return ok1 && ok2 && strings.HasPrefix(s, a)
			case "suffix":
				s, ok1 := v.(string)
				a, ok2 := arg.(string)
				return ok1 && ok2 && strings.HasSuffix(s, a)
			case "equals-ignore-case":
				s, ok1 := v.(string)
				a, ok2 := arg.(string)
				return ok1 && ok2 && strings.EqualFold(s, a)
			case "anything-but":
				excluded := []any{arg}
				if arr, ok := arg.([]any); ok {
					excluded = arr
				}
				for _, x := range excluded {
					if matchOne(x, v) {
						return false
					}
				}
				return true
			case "numeric":
				return matchNumeric(arg, v)
			}
		}
	}
	return false
}

func matchNumeric(arg, v any) bool {
	f, ok := number(v)
	ops, ok2 := arg.([]any)
	if !ok || !ok2 || len(ops)%2 != 0 {
		return false
	}
	for i := 0; i < len(ops); i += 2 {
		op, _ := ops[i].(string)
		n, ok := ops[i+1].(float64)
		if !ok {
			return false
		}
		var pass bool
		switch op {
		case "=":
			pass = f == n
		case "<":
			pass = f < n
		case "<=":
			pass = f <= n
		case ">":
			pass = f > n
		case ">=":
			pass = f >= n
		}
		if !pass {
			return false
		}
	}
	return true
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
