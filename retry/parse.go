package retry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseDeliveryPolicy reads an SNS delivery policy and checks it against
// SNS's rules. It accepts the topic shape ({"http": {"defaultHealthyRetryPolicy":
// …}}), the subscription shape ({"healthyRetryPolicy": …, "throttlePolicy":
// …}) and the bare retry object ({"numRetries": 5, …}); absent fields take
// SNS's defaults, so "{}" is the default policy. Unknown fields are errors.
// Every error is a *PolicyError that names the
// field at fault by its path in data, or says the JSON is malformed.
//
// The returned policy has the default jitter and randomness; set its Jitter
// and Rand fields to change them.
func ParseDeliveryPolicy(data []byte) (DeliveryPolicy, error) { return parse(data, false) }

// ParseDeliveryPolicySQS is ParseDeliveryPolicy with SQS's limits instead of
// SNS's: maxDelayTarget up to 43200 s, numRetries up to 999, no limit on the
// total delay. See the package documentation.
func ParseDeliveryPolicySQS(data []byte) (DeliveryPolicy, error) { return parse(data, true) }

func parse(data []byte, sqs bool) (DeliveryPolicy, error) {
	d, err := decode(data)
	if err != nil {
		return DeliveryPolicy{}, err
	}
	if err := d.policy.validate(sqs); err != nil {
		return DeliveryPolicy{}, d.relocate(err)
	}
	return d.policy, nil
}

// UnmarshalJSON reads any shape ParseDeliveryPolicy reads, with the same
// defaults and the same strictness about unknown fields and types, but does
// not check the limits: call Validate or ValidateSQS afterwards. It sets
// HealthyRetryPolicy and ThrottlePolicy and leaves Jitter and Rand alone.
// JSON null leaves p unchanged.
func (p *DeliveryPolicy) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	d, err := decode(data)
	if err != nil {
		return err
	}
	p.HealthyRetryPolicy, p.ThrottlePolicy = d.policy.HealthyRetryPolicy, d.policy.ThrottlePolicy
	return nil
}

// The fields of each level of a delivery policy document.
func retryFields() []string {
	return []string{"minDelayTarget", "maxDelayTarget", "numRetries", "numNoDelayRetries", "numMinDelayRetries", "numMaxDelayRetries", "backoffFunction"}
}

func subscriptionFields() []string {
	return []string{"healthyRetryPolicy", "throttlePolicy", "sicklyRetryPolicy", "requestPolicy", "guaranteed"}
}

func topicFields() []string {
	return []string{"defaultHealthyRetryPolicy", "defaultThrottlePolicy", "defaultSicklyRetryPolicy", "defaultRequestPolicy", "disableSubscriptionOverrides"}
}

func throttleFields() []string { return []string{"maxReceivesPerSecond"} }

// decoded is a policy read from JSON, with where its parts were in the input.
type decoded struct {
	policy   DeliveryPolicy
	healthy  string // path of the retry object: "healthyRetryPolicy", "http.defaultHealthyRetryPolicy", or "" (bare)
	throttle string // path of the throttle object
}

// relocate rewrites a validation error's field path to where the field was in
// the input.
func (d decoded) relocate(err error) error {
	var pe *PolicyError
	if errors.As(err, &pe) {
		if rest, ok := strings.CutPrefix(pe.Field, "healthyRetryPolicy."); ok {
			pe.Field = join(d.healthy, rest)
		} else if rest, ok := strings.CutPrefix(pe.Field, "throttlePolicy."); ok {
			pe.Field = join(d.throttle, rest)
		}
	}
	return err
}

func decode(data []byte) (decoded, error) {
	d := decoded{policy: DefaultDeliveryPolicy(), healthy: "healthyRetryPolicy", throttle: "throttlePolicy"}
	if len(bytes.TrimSpace(data)) == 0 {
		return d, malformed(nil, "the document is empty; write {} for SNS's default policy")
	}
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		if err == nil { // cannot happen: Valid and Unmarshal share a scanner
			err = errors.New("invalid JSON")
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return d, malformed(err, fmt.Sprintf("%v (at byte %d); check the quotes, commas and braces", se, se.Offset))
		}
		return d, malformed(err, err.Error())
	}
	top, err := members(data, "")
	if err != nil {
		return d, err
	}

	// Which of the three shapes is this?
	const (
		bare         = "bare"
		subscription = "subscription"
		topic        = "topic"
	)
	shape, first := "", ""
	for _, m := range top {
		var s string
		switch {
		case m.key == "http":
			s = topic
		case contains(subscriptionFields(), m.key):
			s = subscription
		case contains(retryFields(), m.key):
			s = bare
		default:
			all := append(append([]string{"http"}, subscriptionFields()...), retryFields()...)
			return d, unknownField("", m.key, all)
		}
		if shape == "" {
			shape, first = s, m.key
			continue
		}
		if s != shape {
			return d, mixedShapes(first, shape, m.key, s)
		}
	}

	p := &d.policy
	switch shape {
	case topic:
		d.healthy, d.throttle = "http.defaultHealthyRetryPolicy", "http.defaultThrottlePolicy"
		raw := top[0].value
		if isNull(raw) {
			return d, nil
		}
		ms, err := members(raw, "http")
		if err != nil {
			return d, err
		}
		for _, m := range ms {
			switch m.key {
			case "defaultHealthyRetryPolicy":
				err = decodeRetryObject(m.value, d.healthy, &p.HealthyRetryPolicy)
			case "defaultThrottlePolicy":
				err = decodeThrottle(m.value, d.throttle, &p.ThrottlePolicy)
			case "defaultSicklyRetryPolicy", "defaultRequestPolicy", "disableSubscriptionOverrides":
				// accepted and ignored, as SNS does
			default:
				err = unknownField("http", m.key, topicFields())
			}
			if err != nil {
				return d, err
			}
		}
	case subscription:
		for _, m := range top {
			var err error
			switch m.key {
			case "healthyRetryPolicy":
				err = decodeRetryObject(m.value, d.healthy, &p.HealthyRetryPolicy)
			case "throttlePolicy":
				err = decodeThrottle(m.value, d.throttle, &p.ThrottlePolicy)
			}
			// sicklyRetryPolicy, requestPolicy and guaranteed are accepted and ignored.
			if err != nil {
				return d, err
			}
		}
	default: // bare retry fields, or {}
		d.healthy = ""
		if err := decodeRetry(top, "", &p.HealthyRetryPolicy); err != nil {
			return d, err
		}
	}
	return d, nil
}

func decodeRetryObject(raw json.RawMessage, path string, h *HealthyRetryPolicy) error {
	if isNull(raw) {
		return nil
	}
	ms, err := members(raw, path)
	if err != nil {
		return err
	}
	return decodeRetry(ms, path, h)
}

func decodeRetry(ms []member, path string, h *HealthyRetryPolicy) error {
	for _, m := range ms {
		field := join(path, m.key)
		var dst *int
		switch m.key {
		case "minDelayTarget":
			dst = &h.MinDelayTarget
		case "maxDelayTarget":
			dst = &h.MaxDelayTarget
		case "numRetries":
			dst = &h.NumRetries
		case "numNoDelayRetries":
			dst = &h.NumNoDelayRetries
		case "numMinDelayRetries":
			dst = &h.NumMinDelayRetries
		case "numMaxDelayRetries":
			dst = &h.NumMaxDelayRetries
		case "backoffFunction":
			if isNull(m.value) {
				continue
			}
			var s string
			if err := json.Unmarshal(m.value, &s); err != nil {
				return &PolicyError{Field: field, Problem: fmt.Sprintf("must be a string such as \"linear\", not %s", kindOf(m.value))}
			}
			f, ok := backoffCanonical(s)
			if !ok || s == "" {
				return &PolicyError{Field: field, Problem: fmt.Sprintf("%q is not a backoff function; use linear, arithmetic, geometric or exponential (any case)", abbreviate(s))}
			}
			h.BackoffFunction = f
			continue
		default:
			return unknownField(path, m.key, retryFields())
		}
		v, present, err := intField(m.value, field)
		if err != nil {
			return err
		}
		if present {
			*dst = v
		}
	}
	return nil
}

func decodeThrottle(raw json.RawMessage, path string, t *ThrottlePolicy) error {
	if isNull(raw) {
		return nil
	}
	ms, err := members(raw, path)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.key != "maxReceivesPerSecond" {
			return unknownField(path, m.key, throttleFields())
		}
		field := join(path, m.key)
		v, present, err := intField(m.value, field)
		if err != nil {
			return err
		}
		if !present {
			continue
		}
		if v < 1 {
			return &PolicyError{Field: field, Problem: fmt.Sprintf("%d is below 1; use 1 or more, or leave the field out for no limit", v)}
		}
		t.MaxReceivesPerSecond = v
	}
	return nil
}

// member is one name/value pair of a JSON object, in input order.
type member struct {
	key   string
	value json.RawMessage
}

// members splits a JSON object (data is known to be valid JSON) into its
// members, rejecting a non-object and duplicate names.
func members(data []byte, path string) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, malformed(err, err.Error())
	}
	if tok != json.Delim('{') {
		if path == "" {
			return nil, malformed(nil, fmt.Sprintf("a delivery policy is a JSON object, not %s; write {} for SNS's default policy", kindOf(data)))
		}
		return nil, &PolicyError{Field: path, Problem: fmt.Sprintf("must be a JSON object, not %s", kindOf(data))}
	}
	var out []member
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, malformed(err, err.Error())
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, malformed(err, err.Error())
		}
		if seen[key] {
			return nil, &PolicyError{Field: join(path, key), Problem: "appears more than once; keep one"}
		}
		seen[key] = true
		out = append(out, member{key, raw})
	}
	return out, nil
}

// intField reads a whole number; null means absent.
func intField(raw json.RawMessage, field string) (int, bool, error) {
	s := string(bytes.TrimSpace(raw))
	if s == "null" {
		return 0, false, nil
	}
	if k := kindOf(raw); k != "a number" {
		hint := ""
		if k == "a string" {
			hint = fmt.Sprintf(" (write %s without the quotes)", abbreviate(strings.Trim(s, `"`)))
		}
		return 0, false, &PolicyError{Field: field, Problem: fmt.Sprintf("must be a whole number, not %s%s", k, hint)}
	}
	if n, err := strconv.ParseInt(s, 10, 0); err == nil {
		return int(n), true, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.Abs(f) > 1<<53 {
		return 0, false, &PolicyError{Field: field, Problem: fmt.Sprintf("%s is out of range; see the limits in the retry package documentation", abbreviate(s))}
	}
	if f != math.Trunc(f) {
		return 0, false, &PolicyError{Field: field, Problem: fmt.Sprintf("%s is not a whole number; use an integer (delays are whole seconds)", abbreviate(s))}
	}
	return int(f), true, nil
}

// abbreviate shortens a value echoed in an error message.
func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// kindOf names the type of a valid JSON value, with an article.
func kindOf(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func malformed(err error, problem string) error {
	return &PolicyError{Problem: problem, Err: err}
}

func unknownField(path, key string, known []string) error {
	problem := "unknown field"
	if s := suggest(key, known); s != "" {
		problem += fmt.Sprintf("; did you mean %q? (names are case-sensitive)", s)
	}
	problem += "; fix or remove it (a misspelt field would silently take its default); the fields here are " + strings.Join(known, ", ")
	return &PolicyError{Field: join(path, key), Problem: problem}
}

func mixedShapes(firstKey, firstShape, key, shape string) error {
	var problem string
	switch {
	case shape == "topic" || firstShape == "topic":
		problem = fmt.Sprintf("cannot sit beside %q: a topic policy {\"http\": …} holds everything under http (http.defaultHealthyRetryPolicy, http.defaultThrottlePolicy); use one shape", firstKey)
	default:
		retryKey, objKey := key, firstKey
		if firstShape == "bare" {
			retryKey, objKey = firstKey, key
		}
		problem = fmt.Sprintf("the document mixes %q, a field of healthyRetryPolicy, with %q; move %q inside healthyRetryPolicy", retryKey, objKey, retryKey)
	}
	return &PolicyError{Field: fieldName(key), Problem: problem}
}

// join appends a key to a path, quoting a key that is not a plain name.
func join(path, key string) string {
	key = fieldName(key)
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldName returns key, quoted if it is empty or not a plain name, so that
// an error's Field is never empty and never ambiguous.
func fieldName(key string) string {
	if key == "" || strings.HasPrefix(key, `"`) {
		return strconv.Quote(key)
	}
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return strconv.Quote(key)
		}
	}
	return key
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest returns the known name key most likely stands for: the same name
// in another case, a known name containing key or contained in it (such as
// healthyRetryPolicy for defaultHealthyRetryPolicy), or the closest name a
// few edits away (at most 2, or a sixth of key's length).
func suggest(key string, known []string) string {
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
	}
	if len(key) < 4 || len(key) > 64 {
		return ""
	}
	lower := strings.ToLower(key)
	if len(key) >= 8 {
		for _, k := range known {
			lk := strings.ToLower(k)
			if strings.Contains(lk, lower) || strings.Contains(lower, lk) {
				return k
			}
		}
	}
	best, bestDist := "", max(2, len(key)/6)+1
	for _, k := range known {
		if d := editDistance(lower, strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
