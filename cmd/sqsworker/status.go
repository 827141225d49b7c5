package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/queueref"
)

func statusCommand() *command {
	return &command{
		path:     "status",
		args:     "QUEUE",
		synopsis: "a queue's state: its messages, its DLQ's, and its fleet controls (paused, breakers, caps in use)",
		help: `Shows QUEUE's approximate message counts (visible, in flight, delayed), its
dead-letter queue's and maxReceiveCount, without receiving any message. With a
fleet table (--table or SQSWORKER_FLEET_TABLE; package fleet) also the queue's
pause switch (since when, by whom, why), the shared circuit breakers
(BreakerOptions.Shared: open until when, or closed) and the cap slots in use,
per cap and key, with the processes holding them. A breaker that is not shared
lives in its process only: see the worker's metrics (sqsotel.ObserveFleet).
Exit status 0 whatever the state.

IAM: sqs:GetQueueUrl, sqs:GetQueueAttributes on the queue and its DLQ; with a
table also dynamodb:DescribeTable, dynamodb:GetItem and dynamodb:Scan on it (the
Scan reads the whole table: an operator's command, not a monitor's).`,
		run: runStatus,
	}
}

// statusReport is what status shows (and prints with -o json).
type statusReport struct {
	Queue           string       `json:"queue"`
	QueueURL        string       `json:"queueUrl"`
	Messages        dlq.Counts   `json:"messages"`
	DLQ             string       `json:"dlq,omitempty"`
	MaxReceiveCount int          `json:"maxReceiveCount,omitempty"`
	DLQMessages     *dlq.Counts  `json:"dlqMessages,omitempty"`
	Fleet           *fleetReport `json:"fleet,omitempty"`
}

type fleetReport struct {
	Table    string               `json:"table"`
	Paused   bool                 `json:"paused"`
	Reason   string               `json:"reason,omitempty"`
	By       string               `json:"by,omitempty"`
	Since    time.Time            `json:"since,omitzero"`
	Breakers []fleet.BreakerUsage `json:"breakers"`
	Caps     []fleet.CapUsage     `json:"caps"`
}

func runStatus(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	ff := fleetFlagsOn(fs)
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, ff.out)
	if !ok {
		return code
	}
	c, ok := a.connect(ctx, cmd, ff.conn)
	if !ok {
		return exitProblems
	}
	url, err := queueref.Resolve(ctx, c, pos[0])
	if err != nil {
		return a.fail(cmd, err)
	}
	r := statusReport{Queue: queueref.Name(url), QueueURL: url}
	if r.Messages, err = dlq.Count(ctx, c, url); err != nil {
		return a.fail(cmd, err)
	}
	t, err := dlq.Discover(ctx, c, url)
	switch {
	case errors.Is(err, dlq.ErrNoRedrivePolicy):
	case err != nil:
		return a.fail(cmd, err)
	default:
		r.DLQ, r.MaxReceiveCount = queueref.Name(t.DLQURL), t.MaxReceiveCount
		n, err := dlq.Count(ctx, c, t.DLQURL)
		if err != nil {
			return a.fail(cmd, err)
		}
		r.DLQMessages = &n
	}
	if *ff.table != "" {
		f, _, code, ok := a.openFleet(ctx, cmd, ff, url)
		if !ok {
			return code
		}
		st, err := f.PauseState(ctx, url)
		if err != nil {
			return a.fail(cmd, err)
		}
		u, err := f.Usage(ctx)
		if err != nil {
			return a.fail(cmd, err)
		}
		r.Fleet = &fleetReport{Table: *ff.table, Paused: st.Paused, Reason: st.Reason, By: st.By, Since: st.At,
			Breakers: append([]fleet.BreakerUsage{}, u.Breakers...), Caps: append([]fleet.CapUsage{}, u.Caps...)}
	}
	if *ff.out == "json" {
		a.writeJSON(r)
		return exitOK
	}
	a.printStatus(r)
	return exitOK
}

func (a *app) printStatus(r statusReport) {
	counts := func(n dlq.Counts) string {
		return fmt.Sprintf("%d visible, %d in flight, %d delayed", n.Visible, n.InFlight, n.Delayed)
	}
	fmt.Fprintf(a.stdout, "queue %s: %s\n", r.Queue, counts(r.Messages))
	if r.DLQMessages != nil {
		fmt.Fprintf(a.stdout, "dead-letter queue %s: %s (maxReceiveCount %d)\n", r.DLQ, counts(*r.DLQMessages), r.MaxReceiveCount)
	} else {
		fmt.Fprintln(a.stdout, "dead-letter queue: none (no RedrivePolicy; `sqsworker setup "+r.Queue+"` gives it one)")
	}
	f := r.Fleet
	if f == nil {
		fmt.Fprintf(a.stdout, "fleet controls: not shown; pass --table or set %s\n", tableEnv)
		return
	}
	now := a.now()
	if f.Paused {
		fmt.Fprintf(a.stdout, "paused: yes, since %s (%s ago) by %s", f.Since.UTC().Format(time.RFC3339), formatDuration(now.Sub(f.Since).Round(time.Second)), f.By)
		if f.Reason != "" {
			fmt.Fprintf(a.stdout, ": %s", f.Reason)
		}
		fmt.Fprintf(a.stdout, " (`sqsworker resume %s`)\n", r.Queue)
	} else {
		fmt.Fprintln(a.stdout, "paused: no")
	}
	if len(f.Breakers) == 0 {
		fmt.Fprintln(a.stdout, "shared breakers: none in the table")
	}
	for _, b := range f.Breakers {
		if b.Open {
			fmt.Fprintf(a.stdout, "breaker %s: open until %s (%s more)\n", b.Name, b.OpenUntil.UTC().Format(time.RFC3339), formatDuration(b.OpenUntil.Sub(now).Round(time.Second)))
		} else {
			fmt.Fprintf(a.stdout, "breaker %s: closed\n", b.Name)
		}
	}
	if len(f.Caps) == 0 {
		fmt.Fprintln(a.stdout, "cap slots in use: none")
	}
	for _, c := range f.Caps {
		slots := "slots"
		if c.Slots == 1 {
			slots = "slot"
		}
		fmt.Fprintf(a.stdout, "cap %s, key %q: %d %s in use, held by %s\n", c.Name, c.Key, c.Slots, slots, strings.Join(c.Holders, ", "))
	}
}
