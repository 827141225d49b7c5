package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// KeyFunc returns a message's idempotency key: messages with the same key
// are the same job, which runs once. An error fails the message like a
// handler's error would: return retry.Permanent(err) for a message that can
// never have a key (it then goes to the dead-letter queue at once).
type KeyFunc func(m *worker.Message) (string, error)

// maxKeySize is the longest key DynamoDB accepts as a partition key, in
// bytes, prefix included. Longer keys fail their message (permanently)
// unless Options.HashKey is set.
const maxKeySize = 2048

// MessageIDKey is the default KeyFunc: the SQS message ID. It catches SQS's
// own duplicates — a message delivered twice, a message whose delete was
// lost after its handler succeeded — but not the same job sent twice as two
// messages; key those by a business key (JSONKey, AttributeKey, or a
// KeyFunc of your own).
func MessageIDKey(m *worker.Message) (string, error) {
	if m.ID == "" {
		return "", retry.Permanent(errors.New("idempotency: the message has no ID"))
	}
	return m.ID, nil
}

// AttributeKey returns a KeyFunc that keys a message by its message
// attribute name (of data type String or Number, or a custom type based on
// them). A message without it fails permanently.
func AttributeKey(name string) KeyFunc {
	return func(m *worker.Message) (string, error) {
		a, ok := m.MessageAttributes[name]
		if !ok || a.StringValue == nil || *a.StringValue == "" {
			return "", retry.Permanent(fmt.Errorf("idempotency: message %s has no message attribute %q with a string or number value, which keys its job", m.ID, name))
		}
		return *a.StringValue, nil
	}
}

// JSONKey returns a KeyFunc that keys a message by the value at path in its
// JSON body: JSONKey("order", "id") reads {"order": {"id": …}}. A string
// is the key as it is; a number is its literal text (so 7 and 7.0 are
// different keys); true, false, an object or an array is its JSON, with
// object keys sorted. JSONKey() keys by the whole body. A body that is not
// JSON, or has no such value (or null, or ""), fails its message
// permanently.
func JSONKey(path ...string) KeyFunc {
	return func(m *worker.Message) (string, error) {
		k, err := jsonValue([]byte(m.Body), path)
		if err != nil {
			return "", retry.Permanent(fmt.Errorf("idempotency: message %s has no key at %s in its body: %w", m.ID, jsonPath(path), err))
		}
		return k, nil
	}
}

// jsonValue returns the key text of the value at path in body.
func jsonValue(body []byte, path []string) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("the body is not JSON: %w", err)
	}
	if dec.More() {
		return "", errors.New("the body is not one JSON value")
	}
	for i, name := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("%s is not an object", jsonPath(path[:i]))
		}
		if v, ok = obj[name]; !ok {
			return "", errors.New("no such field")
		}
	}
	switch v := v.(type) {
	case nil:
		return "", errors.New("the value is null")
	case string:
		if v == "" {
			return "", errors.New("the value is an empty string")
		}
		return v, nil
	case json.Number:
		return v.String(), nil
	default:
		b, err := json.Marshal(v) // maps marshal with sorted keys
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
}

// jsonPath names path for errors: $.order.id.
func jsonPath(path []string) string {
	return strings.Join(append([]string{"$"}, path...), ".")
}

// storedKey is the key as stored: prefix "#" key, the key hashed when
// asked; it fails permanently when too long for DynamoDB.
func (g *Guard) storedKey(m *worker.Message) (string, error) {
	k, err := g.opts.Key(m)
	if err != nil {
		return "", err
	}
	if k == "" {
		return "", retry.Permanent(fmt.Errorf("idempotency: the key function returned an empty key for message %s; return an error for a message that has no key", m.ID))
	}
	if g.opts.HashKey {
		sum := sha256.Sum256([]byte(k))
		k = hex.EncodeToString(sum[:])
	}
	if g.opts.KeyPrefix != "" {
		k = g.opts.KeyPrefix + "#" + k
	}
	if len(k) > maxKeySize {
		return "", retry.Permanent(fmt.Errorf("idempotency: the key of message %s is %d bytes; DynamoDB takes at most %d: set Options.HashKey to store its SHA-256 instead", m.ID, len(k), maxKeySize))
	}
	return k, nil
}
