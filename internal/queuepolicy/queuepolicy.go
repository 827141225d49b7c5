// Package queuepolicy reads and writes the part of an SQS queue policy
// that lets an SNS topic send to the queue: the statement Amazon SNS needs
// before it can deliver a topic's messages to a subscribed queue or to a
// subscription's dead-letter queue. fanout.Setup writes it, fanout.Lint
// checks it, and snstest's fake SNS refuses deliveries it does not allow,
// all with this one reading of the policy language.
package queuepolicy

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// snsPrincipal is the service principal SNS sends as.
const snsPrincipal = "sns.amazonaws.com"

// statement is one policy statement, as far as this package reads it.
type statement struct {
	Sid       string                    `json:"Sid,omitempty"`
	Effect    string                    `json:"Effect"`
	Principal any                       `json:"Principal,omitempty"`
	Action    any                       `json:"Action,omitempty"`
	Resource  any                       `json:"Resource,omitempty"`
	Condition map[string]map[string]any `json:"Condition,omitempty"`
}

// document is a policy document; Statement may be one object or a list.
type document struct {
	Version   string          `json:"Version,omitempty"`
	ID        string          `json:"Id,omitempty"`
	Statement json.RawMessage `json:"Statement"`
}

// parse reads a policy's statements; an empty policy has none.
func parse(policy string) (document, []statement, error) {
	var d document
	if strings.TrimSpace(policy) == "" {
		return document{Version: "2012-10-17"}, nil, nil
	}
	if err := json.Unmarshal([]byte(policy), &d); err != nil {
		return d, nil, fmt.Errorf("the queue policy is not valid JSON: %v", err)
	}
	var sts []statement
	raw := strings.TrimSpace(string(d.Statement))
	switch {
	case raw == "" || raw == "null":
	case strings.HasPrefix(raw, "["):
		if err := json.Unmarshal(d.Statement, &sts); err != nil {
			return d, nil, fmt.Errorf("the queue policy's Statement does not parse: %v", err)
		}
	default:
		var st statement
		if err := json.Unmarshal(d.Statement, &st); err != nil {
			return d, nil, fmt.Errorf("the queue policy's Statement does not parse: %v", err)
		}
		sts = []statement{st}
	}
	return d, sts, nil
}

// list reads a string-or-list policy element.
func list(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// like matches s against an IAM pattern with * and ? wildcards.
func like(pattern, s string) bool {
	ok, err := path.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(s, "/", "\x00"))
	return err == nil && ok
}

// everyone reports whether the statement's principal is everyone: "*" or
// {"AWS":"*"}.
func (st statement) everyone() bool {
	switch p := st.Principal.(type) {
	case string:
		return p == "*"
	case map[string]any:
		for _, s := range list(p["AWS"]) {
			if s == "*" {
				return true
			}
		}
	}
	return false
}

// service reports whether the statement's principal names the service.
func (st statement) service(name string) bool {
	if p, ok := st.Principal.(map[string]any); ok {
		for _, s := range list(p["Service"]) {
			if s == name {
				return true
			}
		}
	}
	return false
}

// sends reports whether the statement's action covers sqs:SendMessage and
// its resource the queue queueARN.
func (st statement) sends(queueARN string) bool {
	action := false
	for _, a := range list(st.Action) {
		a = strings.ToLower(a)
		action = action || a == "*" || a == "sqs:*" || a == "sqs:sendmessage" || like(a, "sqs:sendmessage")
	}
	resource := st.Resource == nil
	for _, r := range list(st.Resource) {
		resource = resource || like(r, queueARN)
	}
	return action && resource
}

// open reports whether the statement lets everyone send to the queue
// unconditionally.
func (st statement) open(queueARN string) bool {
	return strings.EqualFold(st.Effect, "Allow") && st.everyone() && st.sends(queueARN) && len(st.Condition) == 0
}

// matchesSNS reports whether a statement applies to SNS sending to
// queueARN for topicARN.
func (st statement) matchesSNS(queueARN, topicARN string) bool {
	if !st.everyone() && !st.service(snsPrincipal) {
		return false
	}
	if !st.sends(queueARN) {
		return false
	}
	topicAccount := ""
	if parts := strings.Split(topicARN, ":"); len(parts) == 6 {
		topicAccount = parts[4]
	}
	for op, kv := range st.Condition {
		for key, want := range kv {
			var have string
			switch strings.ToLower(key) {
			case "aws:sourcearn":
				have = topicARN
			case "aws:sourceaccount":
				have = topicAccount
			default:
				return false // a condition this reading cannot judge: not a grant
			}
			ok := false
			for _, w := range list(want) {
				switch op {
				case "ArnEquals", "StringEquals":
					ok = ok || w == have
				case "ArnLike", "StringLike":
					ok = ok || like(w, have)
				default:
					return false
				}
			}
			if !ok {
				return false
			}
		}
	}
	return true
}

// AllowsTopic reports whether the queue policy lets SNS send messages of
// topic topicARN to the queue queueARN: an Allow statement for SNS's service
// principal (or everyone) with sqs:SendMessage on the queue, whose
// conditions (aws:SourceArn, aws:SourceAccount) the topic meets, and no
// Deny statement that applies. Conditions on other keys are taken as not
// granting. An empty policy allows nothing.
func AllowsTopic(policy, queueARN, topicARN string) (bool, error) {
	return allows(policy, queueARN, topicARN, false)
}

// allows is AllowsTopic; scoped leaves out the Allow statements that let
// everyone send unconditionally (see OpenStatements).
func allows(policy, queueARN, topicARN string, scoped bool) (bool, error) {
	_, sts, err := parse(policy)
	if err != nil {
		return false, err
	}
	allowed := false
	for _, st := range sts {
		if !st.matchesSNS(queueARN, topicARN) {
			continue
		}
		if strings.EqualFold(st.Effect, "Deny") {
			return false, nil
		}
		allowed = allowed || (strings.EqualFold(st.Effect, "Allow") && !(scoped && st.open(queueARN)))
	}
	return allowed, nil
}

// OpenStatements names the statements of the queue policy that let
// everyone (Principal "*" or {"AWS":"*"}) send messages to the queue
// queueARN (sqs:SendMessage, sqs:* or *) without any condition: its Sid, or
// "statement N" (from 1) for one without. Anyone who can reach SQS may then
// put messages on the queue, among them forged SNS envelopes, which
// fanout.Unwrap cannot tell from SNS's (it does not verify signatures). A
// statement with a condition of any kind is not counted: the condition
// (aws:SourceArn, aws:SourceAccount, aws:PrincipalOrgID, …) is taken to
// restrict who sends.
func OpenStatements(policy, queueARN string) ([]string, error) {
	_, sts, err := parse(policy)
	if err != nil {
		return nil, err
	}
	var names []string
	for i, st := range sts {
		if !st.open(queueARN) {
			continue
		}
		if st.Sid != "" {
			names = append(names, st.Sid)
		} else {
			names = append(names, fmt.Sprintf("statement %d", i+1))
		}
	}
	return names, nil
}

// StatementID is the Sid of the statement GrantTopic adds for a topic.
func StatementID(topicARN string) string {
	name := topicARN[strings.LastIndexByte(topicARN, ':')+1:]
	return "sqsworker-sns-" + strings.NewReplacer(".", "-", "_", "-").Replace(name)
}

// GrantTopic returns the queue policy with a statement that lets SNS send
// the topic's messages to the queue, conditioned on the topic's ARN
// (aws:SourceArn), and whether it had to change. Other statements are
// kept; a statement of the same Sid (see StatementID) is replaced. A policy
// that lets the topic send only through an open statement (see
// OpenStatements) gets the statement too, so that removing the open one
// does not cut SNS off; the open statement itself is kept.
func GrantTopic(policy, queueARN, topicARN string) (string, bool, error) {
	if ok, err := allows(policy, queueARN, topicARN, true); err != nil || ok {
		return policy, false, err
	}
	d, _, err := parse(policy)
	if err != nil {
		return policy, false, err
	}
	var raws []json.RawMessage
	if s := strings.TrimSpace(string(d.Statement)); strings.HasPrefix(s, "[") {
		if err := json.Unmarshal(d.Statement, &raws); err != nil {
			return policy, false, err
		}
	} else if s != "" && s != "null" {
		raws = []json.RawMessage{d.Statement}
	}
	sid := StatementID(topicARN)
	kept := raws[:0]
	for _, r := range raws {
		var st statement
		if json.Unmarshal(r, &st) == nil && st.Sid == sid {
			continue
		}
		kept = append(kept, r)
	}
	grant, _ := json.Marshal(statement{
		Sid: sid, Effect: "Allow", Principal: map[string]any{"Service": snsPrincipal}, Action: "sqs:SendMessage",
		Resource: queueARN, Condition: map[string]map[string]any{"ArnEquals": {"aws:SourceArn": topicARN}},
	})
	kept = append(kept, grant)
	if d.Version == "" {
		d.Version = "2012-10-17"
	}
	d.Statement, _ = json.Marshal(kept)
	out, err := json.Marshal(d)
	return string(out), true, err
}
