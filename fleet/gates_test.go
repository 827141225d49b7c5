package fleet_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/worker"
)

// A breaker as a ReceiveGate closes when it opens, opens again when it
// half-opens (for the probe), and stays open once a probe closes it; all
// on synctest's clock (the breaker alone calls no DynamoDB).
func TestBreakerAsReceiveGate(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, client, table, "p1") // time.Now: synctest's inside the bubble
	synctest.Test(t, func(t *testing.T) {
		b, err := f.Breaker("gate", func(o *fleet.BreakerOptions) {
			o.Counts = func(err error) bool { return errors.Is(err, errDown) }
			o.Threshold = 1
			o.OpenFor = 10 * time.Second
		})
		if err != nil {
			t.Fatal(err)
		}
		reports := make(chan bool, 10)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go b.Watch(ctx, func(open bool) { reports <- open })
		want := func(open bool, when string) {
			t.Helper()
			synctest.Wait()
			select {
			case got := <-reports:
				if got != open {
					t.Fatalf("%s: gate reported open=%v, want %v", when, got, open)
				}
			default:
				t.Fatalf("%s: no report; want open=%v", when, open)
			}
		}
		want(true, "at the start")
		down := true
		h := b.Middleware()(worker.HandlerFunc(func(context.Context, *worker.Message) error {
			if down {
				return errDown
			}
			return nil
		}))
		_ = h.Handle(t.Context(), &worker.Message{})
		want(false, "after the failure that opens the breaker")
		// Why, for worker.Health: the breaker's Ready, and AllOpen's,
		// which joins its gates' reasons.
		all, _ := fleet.AllOpen(chanGate(nil), b).(interface{ Ready() error })
		if err := b.Ready(); err == nil || !strings.Contains(err.Error(), "breaker gate is open until") || !strings.Contains(err.Error(), "10s more") {
			t.Fatalf("Ready while open = %v; want the breaker open, with the time left", err)
		}
		if all == nil || all.Ready() == nil || all.Ready().Error() != b.Ready().Error() {
			t.Fatalf("AllOpen's Ready = %v; want the breaker's reason", all)
		}
		time.Sleep(10 * time.Second)
		want(true, "after OpenFor (half-open, for the probe)")
		if err := b.Ready(); err != nil || all.Ready() != nil {
			t.Fatalf("Ready while half-open = %v, AllOpen's %v; want nil (the probe is let in)", err, all.Ready())
		}
		if !b.Probe() || !all.(interface{ Probe() bool }).Probe() {
			t.Fatalf("Probe while half-open = false; want true (the gate lets one message in)")
		}
		// No probe came (the message went elsewhere): after probeRearm the
		// gate reports again, opening another probe window.
		time.Sleep(2 * time.Second)
		want(true, "2 s into a probe window no job took")
		// A failed probe opens the breaker again (closed gate) for twice
		// as long; then a new window.
		_ = h.Handle(t.Context(), &worker.Message{})
		synctest.Wait()
		for drained := false; !drained; {
			select {
			case open := <-reports:
				if open {
					t.Fatalf("the gate reported open while a failed probe opened the breaker again")
				}
			default:
				drained = true
			}
		}
		if b.State() != fleet.StateOpen || b.Probe() {
			t.Fatalf("after a failed probe: state %s, Probe %v; want open, no probe", b.State(), b.Probe())
		}
		time.Sleep(20 * time.Second)
		want(true, "after twice OpenFor (half-open again)")
		down = false
		if err := h.Handle(t.Context(), &worker.Message{}); err != nil {
			t.Fatalf("probe: %v", err)
		}
		synctest.Wait()
		// While the probe ran the gate may have been reported closed (no
		// second message comes in meanwhile); its last report is open.
		last := true
		for drained := false; !drained; {
			select {
			case last = <-reports:
			default:
				drained = true
			}
		}
		if !last || b.State() != fleet.StateClosed || b.Probe() {
			t.Fatalf("after a good probe: last report open=%v, state %s, Probe %v; want open, closed, no probe", last, b.State(), b.Probe())
		}
	})
}

// AllOpen is open only while every gate is, and reports once all have
// reported.
func TestAllOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := make(chan bool), make(chan bool)
		reports := make(chan bool, 10)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go fleet.AllOpen(chanGate(a), chanGate(b)).Watch(ctx, func(open bool) { reports <- open })
		a <- true
		synctest.Wait()
		if len(reports) != 0 {
			t.Fatal("AllOpen reported before every gate had")
		}
		for _, step := range []struct {
			ch   chan bool
			open bool
			want []bool
		}{
			{b, true, []bool{true}},
			{a, false, []bool{false}},
			{b, false, nil},
			{a, true, nil},
			{b, true, []bool{true}},
		} {
			step.ch <- step.open
			synctest.Wait()
			var got []bool
			for len(reports) > 0 {
				got = append(got, <-reports)
			}
			if len(got) != len(step.want) || (len(got) == 1 && got[0] != step.want[0]) {
				t.Fatalf("reports %v, want %v", got, step.want)
			}
		}
	})
}

// chanGate passes on each value sent on it.
type chanGate chan bool

func (g chanGate) Watch(ctx context.Context, set func(bool)) {
	for {
		select {
		case open := <-g:
			set(open)
		case <-ctx.Done():
			return
		}
	}
}
