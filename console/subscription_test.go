package console

import (
	"context"
	"fmt"
	"html"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

// A subscription's dead-letter queue opens in the triage and search pages
// like a queue's own, and its Redrive (fanout.Redrive) sends the messages
// to the subscribed queue only: not to the topic's other subscriber, not
// to the queue's own dead-letter queue.
func TestSubscriptionDLQTriagedAndRedrivenToItsQueueOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		s := snstest.For(t, f)
		ctx := context.Background()
		billing, err := fanout.Setup(ctx, s, f, fanout.SetupOptions{Topic: "rental-orders", Queue: dlq.SetupOptions{Name: "billing"}})
		if err != nil {
			t.Fatal(err)
		}
		shipping, err := fanout.Setup(ctx, s, f, fanout.SetupOptions{Topic: "rental-orders", Queue: dlq.SetupOptions{Name: "shipping"}})
		if err != nil {
			t.Fatal(err)
		}
		// What SNS could not deliver to billing.
		for i := range 3 {
			f.MustSend(t, billing.FanoutDLQURL, fmt.Sprintf(`{"rental":%d}`, i))
		}
		x := &fixture{f: f}
		hh, err := New(f, func(o *Options) {
			o.SNS = s
			o.Queues = []string{"billing", "shipping"}
			o.Actions = true
			o.Now = f.Now
		})
		if err != nil {
			t.Fatal(err)
		}
		x.h = hh.(*handler)
		_, _, ov := x.open(t, "/")
		base := "/queues/billing/topics/rental-orders/dlq"
		if !strings.Contains(ov, `href="`+base+`"`) {
			t.Fatalf("the overview does not link the subscription's dead-letter queue:\n%s", ov)
		}
		cookie, token, page := x.open(t, base)
		for _, want := range []string{`id="subscription"`, `<span id="total">3</span>`, html.EscapeString(subscriptionReason("billing")), "fanout.Redrive"} {
			if !strings.Contains(page, want) {
				t.Errorf("the subscription DLQ's page lacks %q:\n%s", want, page)
			}
		}
		_, _, sp := x.open(t, base+"/search?text="+url.QueryEscape(`"rental":1`), cookie)
		if !strings.Contains(sp, `<b id="matched">1</b>`) || !strings.Contains(sp, `action="`+base+`/redrive"`) && !strings.Contains(sp, `formaction="`+base+`/redrive"`) {
			t.Fatalf("the search of the subscription DLQ:\n%s", sp)
		}
		id := resultRE.FindStringSubmatch(sp)[1]
		if _, _, mp := x.open(t, base+"/messages/"+id, cookie); !strings.Contains(mp, "SNS could not deliver this message to queue billing") || strings.Contains(mp, "<textarea") {
			t.Errorf("the message page of a subscription DLQ:\n%s", mp)
		}
		st := x.finish(t, x.post(t, base+"/redrive", cookie, url.Values{csrfField: {token}, "scope": {"all"}}))
		if !st.OK || st.Moved != 3 || st.Method != "manual" {
			t.Fatalf("the redrive: %+v; want 3 moved by the manual move", st)
		}
		j := x.h.job(x.h.jobOrder[0])
		if j.Back != base || j.Queue != "billing" {
			t.Errorf("the job's page links back to %q (queue %q); want %s", j.Back, j.Queue, base)
		}
		got := bodiesIn(f, billing.Queue.QueueURL)
		if !slices.Equal(got, []string{`{"rental":0}`, `{"rental":1}`, `{"rental":2}`}) {
			t.Fatalf("billing holds %v; want the 3 redriven", got)
		}
		for _, u := range []string{shipping.Queue.QueueURL, billing.FanoutDLQURL, billing.Queue.DLQURL, shipping.FanoutDLQURL} {
			if n := len(f.Messages(u)); n != 0 {
				t.Errorf("%s holds %d messages; want none", u, n)
			}
		}
	})
}
