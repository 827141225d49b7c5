package console

import (
	"context"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/uniqueattr"
	"github.com/sqsworker/sqsworker/sqstest"
)

// A dead-lettered job's message page shows its unique key (package
// unique's attribute), with what its mode did with the key; a message
// without one shows none.
func TestMessagePageShowsUniqueKey(t *testing.T) {
	f := sqstest.For(t)
	_, dlqURL := f.MustCreateQueueWithDLQ(t, "jobs", 3, nil)
	claim := uniqueattr.Claim{Mode: uniqueattr.ModeSettled, Token: "5eed", Key: "report/acct-42"}
	keyed := f.MustSend(t, dlqURL, "keyed", func(in *sqs.SendMessageInput) {
		in.MessageAttributes = map[string]types.MessageAttributeValue{uniqueattr.Name: {DataType: aws.String("String"), StringValue: aws.String(claim.Value())}}
	})
	plain := f.MustSend(t, dlqURL, "plain")
	h, err := New(f, func(o *Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, rec.Code, rec.Body.String())
		}
		return rec.Body.String()
	}
	get("/queues/jobs/dlq")
	page := get("/queues/jobs/dlq/messages/" + keyed)
	if want := `<p id="unique-key">Unique key (package unique): <span class="mono">` + html.EscapeString(uniqueattr.Describe(map[string]types.MessageAttributeValue{uniqueattr.Name: {StringValue: aws.String(claim.Value())}}, "")); !strings.Contains(page, want) || !strings.Contains(page, "report/acct-42 (until settled") {
		t.Errorf("the keyed message's page lacks %q:\n%s", want, page)
	}
	if page := get("/queues/jobs/dlq/messages/" + plain); strings.Contains(page, `id="unique-key"`) {
		t.Errorf("a message without a key shows one:\n%s", page)
	}
}
