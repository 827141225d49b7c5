package idempotency_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// FuzzJSONKey feeds message bodies (outside input) to JSONKey: it never
// panics, gives the same key for the same body, never an empty key, and
// fails only permanently (a body without its key is poison).
func FuzzJSONKey(f *testing.F) {
	for _, seed := range []struct{ body, path string }{
		{`{"order": {"id": 42}}`, "order.id"},
		{`{"id": "a"}`, "id"},
		{`{"id": [1, {"b": 2, "a": 1}]}`, "id"},
		{`{"id": null}`, "id"},
		{`{"id": 1e400}`, "id"},
		{`{"id": "x"} {"id": "y"}`, "id"},
		{`"just a string"`, ""},
		{`{"a": {"a": {"a": true}}}`, "a.a.a"},
		{`not json`, "id"},
	} {
		f.Add(seed.body, seed.path)
	}
	f.Fuzz(func(t *testing.T, body, path string) {
		var p []string
		if path != "" {
			p = strings.Split(path, ".")
		}
		key := idempotency.JSONKey(p...)
		m := &worker.Message{ID: "m", Body: body}
		k1, err1 := key(m)
		k2, err2 := key(m)
		if k1 != k2 || (err1 == nil) != (err2 == nil) {
			t.Fatalf("not deterministic: %q, %v then %q, %v", k1, err1, k2, err2)
		}
		switch {
		case err1 == nil && k1 == "":
			t.Fatal("empty key without an error")
		case err1 != nil && !errors.Is(err1, retry.ErrPermanent):
			t.Fatalf("a body without a key is not permanent: %v", err1)
		case err1 != nil && k1 != "":
			t.Fatalf("a key %q with an error %v", k1, err1)
		}
	})
}
