package faultproxy

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzParse feeds the proxy's readers of client input — request bodies,
// response bodies, User-Agent headers, query-protocol forms — anything: they
// must never panic, and what they return must come from their input.
func FuzzParse(f *testing.F) {
	f.Add(`{"QueueUrl":"http://127.0.0.1:9324/000000000000/q","Entries":[{"Id":"0","ReceiptHandle":"h-1"}]}`, "aws-sdk-go-v2/1.0 app/chaos-w3")
	f.Add(`{"Messages":[{"MessageId":"m-1","ReceiptHandle":"h-1"}],"Successful":[{"MessageId":"m-2"}]}`, "")
	f.Add(`Action=DeleteMessage&ReceiptHandle=x`, "app/")
	f.Fuzz(func(t *testing.T, body, userAgent string) {
		queue, handles, _ := requestIn([]byte(body))
		if !strings.Contains(body, `\`) { // without JSON escapes, what is read is in the body as it is
			for _, s := range append(handles, queue) {
				if !strings.Contains(body, s) {
					t.Fatalf("%q is not in the body", s)
				}
			}
		}
		idsIn([]byte(body))
		if id := appID(userAgent); id != "" && !strings.Contains(userAgent, "app/"+id) {
			t.Fatalf("app ID %q is not in %q", id, userAgent)
		}
		r, err := http.NewRequest("POST", "http://127.0.0.1/", strings.NewReader(body))
		if err == nil {
			actionOf(r, []byte(body))
		}
	})
}
