package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/harness/fleettable"
)

// newFleet creates a fleet table on the local DynamoDB and returns it
// opened by each holder, as by processes of their own.
func newFleet(t *testing.T, holders ...string) []*fleet.Fleet {
	t.Helper()
	db, table := fleettable.New(t, "console-fleet")
	var out []*fleet.Fleet
	for _, h := range holders {
		f, err := fleet.New(db, table, func(o *fleet.Options) { o.Holder = h })
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// rowOf returns the table row of queue on a page.
func rowOf(page, queue string) string {
	_, rest, ok := strings.Cut(page, `<tr data-queue="`+queue+`">`)
	if !ok {
		return ""
	}
	row, _, _ := strings.Cut(rest, "</tr>")
	return row
}

// An operator pauses and resumes a queue from the Fleet page: the switch
// in the fleet table changes, with a reason that names the console user;
// the Queues page marks the queue paused; each action is in the audit log.
// The page shows the shared breakers and the cap slots in use.
func TestFleetPagePausesAndResumesAQueue(t *testing.T) {
	fleets := newFleet(t, "console-test", "worker-7")
	fl, proc := fleets[0], fleets[1]
	x := newFixture(t, withActions, func(o *Options) { o.Fleet = fl })

	// A worker process's controls: a shared breaker opened, two slots of
	// tenant acme held.
	fleettable.Occupy(t, proc)

	cookie, token, page := x.open(t, "/fleet")
	row := rowOf(page, "orders")
	if !strings.Contains(row, "receiving") || !strings.Contains(row, `/queues/orders/pause"`) || cookie == nil || token == "" {
		t.Fatalf("fleet page before a pause: want orders receiving with a Pause form; row:\n%s", row)
	}
	// No worker receives from a dead-letter queue: the page offers no Pause.
	if row := rowOf(page, "orders-dlq"); strings.Contains(row, "/pause\"") || !strings.Contains(row, "dead-letter queue of orders") {
		t.Fatalf("fleet page: want no Pause on orders-dlq, and why; row:\n%s", row)
	}
	for _, want := range []string{`data-breaker="payments-api"`, "open</span> until", `data-cap="tenant" data-key="acme"`, `<td class="n slots">2</td>`, "worker-7"} {
		if !strings.Contains(page, want) {
			t.Fatalf("fleet page: want %q in\n%s", want, page)
		}
	}

	resp := x.post(t, "/queues/orders/pause", cookie, url.Values{csrfField: {token}, "reason": {"deploy freeze"}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/fleet?notice=") {
		t.Fatalf("pause: %s %s\n%s", resp.Status, resp.Header.Get("Location"), body(t, resp))
	}
	st, err := fl.PauseState(t.Context(), "orders")
	if err != nil || !st.Paused || st.Reason != "deploy freeze (console user local)" || st.By != "console-test" {
		t.Fatalf("after the console's pause: %+v, %v; want paused, the reason naming the user, by the console's holder", st, err)
	}
	if other, _ := fl.PauseState(t.Context(), "audit"); other.Paused {
		t.Fatal("pausing orders paused audit too")
	}
	if row := rowOf(body(t, x.get(t, "/")), "orders"); !strings.Contains(row, `class="badge paused"`) {
		t.Fatalf("queues page: orders not marked paused; row:\n%s", row)
	}
	if row := rowOf(body(t, x.get(t, "/")), "audit"); strings.Contains(row, "paused") {
		t.Fatalf("queues page: audit marked paused; row:\n%s", row)
	}
	_, token, page = x.open(t, "/fleet", cookie)
	if row := rowOf(page, "orders"); !strings.Contains(row, "paused") || !strings.Contains(row, "deploy freeze") || !strings.Contains(row, `/queues/orders/resume"`) {
		t.Fatalf("fleet page while paused: want orders paused, its reason and a Resume form; row:\n%s", row)
	}

	resp = x.post(t, "/queues/orders/resume", cookie, url.Values{csrfField: {token}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("resume: %s\n%s", resp.Status, body(t, resp))
	}
	if st, err := fl.PauseState(t.Context(), "orders"); err != nil || st.Paused {
		t.Fatalf("after the console's resume: %+v, %v; want receiving", st, err)
	}
	log := x.log.String()
	for _, want := range []string{`msg="sqsworker/console: pause" user=local queue=orders reason="deploy freeze (console user local)"`, `msg="sqsworker/console: resume" user=local queue=orders`} {
		if !strings.Contains(log, want) {
			t.Fatalf("audit log: want %q in\n%s", want, log)
		}
	}

	// Refused: a queue the console does not show, a request without the
	// CSRF token, a reason too long to be one.
	x.h.opts.Queues = []string{"orders"}
	if resp := x.post(t, "/queues/audit/pause", cookie, url.Values{csrfField: {token}}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("pausing a queue not shown: %s; want 404", resp.Status)
	}
	if resp := x.post(t, "/queues/orders/pause", cookie, url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("pause without a CSRF token: %s; want 403", resp.Status)
	}
	if resp := x.post(t, "/queues/orders/pause", cookie, url.Values{csrfField: {token}, "reason": {strings.Repeat("x", 501)}}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("pause with a 501-character reason: %s; want 400", resp.Status)
	}
	for _, q := range []string{"orders", "audit"} {
		if st, _ := fl.PauseState(t.Context(), q); st.Paused {
			t.Fatalf("a refused request paused %s", q)
		}
	}
}

// A read-only console shows the pause switches and offers no Pause or
// Resume; a request to pause is refused and changes nothing. Without
// Options.Fleet there is no Fleet page.
func TestFleetPageReadOnly(t *testing.T) {
	fl := newFleet(t, "console-test")[0]
	if err := fl.Pause(t.Context(), "orders", "migration"); err != nil {
		t.Fatal(err)
	}
	x := newFixture(t, func(o *Options) { o.Fleet = fl })
	cookie, token, page := x.open(t, "/fleet")
	if row := rowOf(page, "orders"); !strings.Contains(row, "paused") || !strings.Contains(row, "migration") || !strings.Contains(row, "console-test") {
		t.Fatalf("read-only fleet page: want orders paused with its reason and who; row:\n%s", row)
	}
	if cookie != nil || token != "" || strings.Contains(page, "<form") || strings.Contains(page, "<button") {
		t.Fatal("the read-only fleet page offers actions")
	}
	session := &http.Cookie{Name: sessionCookie, Value: "s"}
	resp := x.post(t, "/queues/orders/resume", session, url.Values{csrfField: {x.h.csrf.sign("s")}})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body(t, resp), "read-only") {
		t.Fatalf("resume in read-only mode: %s; want 403 saying read-only", resp.Status)
	}
	if st, _ := fl.PauseState(t.Context(), "orders"); !st.Paused {
		t.Fatal("a read-only console resumed the queue")
	}

	plain := newFixture(t)
	if resp := plain.get(t, "/fleet"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /fleet without Options.Fleet: %s; want 404", resp.Status)
	}
	if strings.Contains(body(t, plain.get(t, "/")), `href="/fleet"`) {
		t.Fatal("the Queues page links a Fleet page the console does not have")
	}
}
