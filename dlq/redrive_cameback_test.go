package dlq

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/sqsmsg"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	sched "github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/sqstest"
)

// failAgain is a worker whose jobs all fail again: it receives every message
// of the source queue and dead-letters it anew, with how. It returns how
// many messages it ran, by body.
type failAgain struct {
	t    *testing.T
	f    *sqstest.Fake
	tgt  Target
	how  string // "move": the library's copy (a new ID); "sqs": SQS's own redrive (the same ID); "relay": snoozed first (see run)
	runs map[string]int
	// relayed holds the IDs of the fresh copies "relay" sent.
	relayed map[string]bool
}

// run takes what the redrive has moved so far and fails it.
func (w *failAgain) run() {
	ctx := context.Background()
	for {
		out, err := w.f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(w.tgt.SourceURL), MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			w.t.Fatalf("worker receive: %v", err)
		}
		if len(out.Messages) == 0 {
			return
		}
		for _, m := range out.Messages {
			if w.how == "relay" && !w.relayed[aws.ToString(m.MessageId)] {
				// The job snoozes first: the runtime relays it as a fresh
				// copy carrying its first message ID and the attempts it
				// spent, and deletes it. The copy then fails as under
				// "sqs": SQS moves it, keeping the copy's own ID.
				w.relay(m)
				continue
			}
			w.runs[aws.ToString(m.Body)]++
			if w.how == "move" {
				if err := mustMover(w.t, w.f, w.tgt).Move(ctx, m, Provenance{Error: "still broken", Handler: "h"}); err != nil {
					w.t.Fatalf("worker Move: %v", err)
				}
			}
			// "sqs": released at once (visibility 0); the next receive finds
			// it past maxReceiveCount (1), and the fake moves it to the
			// dead-letter queue as SQS does, keeping its message ID.
			if w.how == "sqs" || w.how == "relay" {
				if _, err := w.f.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(w.tgt.SourceURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
					w.t.Fatalf("worker release: %v", err)
				}
			}
		}
	}
}

// relay does what the settlement engine does with a snoozed message on a
// standard queue: a fresh copy with the job's first message ID (the one it
// has, or this message's) and its spent attempts, then the delete.
func (w *failAgain) relay(m types.Message) {
	ctx := context.Background()
	attrs := map[string]types.MessageAttributeValue{}
	maps.Copy(attrs, m.MessageAttributes)
	origin := sched.Origin(m.MessageAttributes)
	if origin == "" {
		origin = aws.ToString(m.MessageId)
	}
	attrs[sched.OriginAttribute] = sched.OriginValue(origin)
	attrs[sched.AttemptsAttribute] = sched.AttemptsValue(sched.Attempts(m.MessageAttributes) + 1)
	out, err := w.f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(w.tgt.SourceURL), MessageBody: m.Body, MessageAttributes: attrs})
	if err != nil {
		w.t.Fatalf("worker relay: %v", err)
	}
	if w.relayed == nil {
		w.relayed = map[string]bool{}
	}
	w.relayed[aws.ToString(out.MessageId)] = true
	if _, err := w.f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(w.tgt.SourceURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		w.t.Fatalf("worker relay delete: %v", err)
	}
}

// TestRedriveLeavesWhatComesBack is issue 37's first finding: jobs that fail
// again while they are redriven come back to the dead-letter queue, and the
// manual move, which received until a receive came back empty, moved them
// again and again (a redrive of 3 messages reported 843 moved). The redrive
// now moves only the messages that were in the dead-letter queue when it
// began; the ones that come back are counted and left there, whether they
// come back with the same message ID (SQS's own redrive) or as the
// library's dead-letter copy (a new ID that names the one it was sent with),
// or as a copy the runtime relayed (a snooze) before SQS moved it (a new ID;
// its origin attribute names the one the redrive sent, since the redrive
// strips the relay attributes the job had before), or — with no attribute
// left to name it (ten of the sender's) — by their content.
func TestRedriveLeavesWhatComesBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		how   string
		attrs int
	}{
		{"library copy", "move", 1},
		{"library copy, separate provenance fills the attributes", "move", 4},
		{"library copy, no attribute left", "move", 10},
		{"SQS redrive", "sqs", 2},
		{"relayed, then SQS redrive", "relay", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := sqstest.For(t)
				maxReceive := 5
				if tc.how == "sqs" || tc.how == "relay" {
					maxReceive = 1
				}
				src, _ := f.MustCreateQueueWithDLQ(t, "jobs", maxReceive, nil)
				tgt, err := Discover(context.Background(), f, src)
				if err != nil {
					t.Fatal(err)
				}
				// Three poison jobs, two with the same content: in the
				// dead-letter queue with provenance (or, for SQS's redrive,
				// without any).
				bodies := []string{"job-a", "job-b", "job-b"}
				for _, b := range bodies {
					attrs := sqsmsg.UserAttributes(tc.attrs)
					if tc.how == "relay" {
						// Jobs the runtime had relayed before they
						// failed: the redrive strips what they carry.
						attrs[sched.OriginAttribute] = sched.OriginValue("first-" + b)
						attrs[sched.AttemptsAttribute] = sched.AttemptsValue(4)
					}
					f.MustSend(t, tgt.SourceURL, b, sqsmsg.WithAttributes(attrs))
				}
				w := &failAgain{t: t, f: f, tgt: tgt, how: "move", runs: map[string]int{}}
				w.run() // the first failure: into the dead-letter queue
				w.how, w.runs = tc.how, map[string]int{}

				var progress []Progress
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				res, err := Redrive(ctx, f, tgt, RedriveOptions{
					Method: "manual", Rate: -1,
					Progress: func(p Progress) {
						progress = append(progress, p)
						if p.Scanned > 60 { // going round: the jobs it moves come back and are moved again
							cancel()
						}
						w.run() // every job moved so far fails again at once
					},
				})
				if err != nil {
					t.Fatalf("Redrive: %v (result %+v)", err, res)
				}
				if res.Moved != 3 || res.CameBack != 3 || !res.Done || res.Total != 3 {
					t.Errorf("result = %+v; want 3 moved, 3 came back, done", res)
				}
				if res.Scanned != 6 || res.Skipped != 0 || res.NotSeen != 0 {
					t.Errorf("scanned %d, skipped %d, not seen %d; want 6 scanned (3 + the 3 back), none skipped or missed", res.Scanned, res.Skipped, res.NotSeen)
				}
				if w.runs["job-a"] != 1 || w.runs["job-b"] != 2 {
					t.Errorf("jobs ran %v after the redrive began; want each once more", w.runs)
				}
				w.run()
				if got := len(f.Messages(tgt.DLQURL)); got != 3 {
					t.Errorf("the dead-letter queue holds %d messages, want the 3 that came back", got)
				}
				if last := progress[len(progress)-1]; last.CameBack != 3 || !last.Done {
					t.Errorf("last progress = %+v", last)
				}
			})
		})
	}
}

// TestRedriveMovesWhatArrivesIndependently: a message dead-lettered during
// the redrive that the redrive did not send (another job's failure) is not
// taken for one that came back, even with the content of one that was sent.
func TestRedriveMovesWhatArrivesIndependently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, tgt := fakePair(t, "orders")
		deadLetter(t, f, tgt, 2, sqsmsg.UserAttributes(1), failedWith("boom"))
		sent := false
		res, err := Redrive(context.Background(), f, tgt, RedriveOptions{
			Method: "manual", Rate: -1,
			Progress: func(p Progress) {
				if sent {
					return
				}
				sent = true
				// A new failure with the content of a job being redriven,
				// dead-lettered by another worker.
				id := f.MustSend(t, tgt.SourceURL, "job-0", sqsmsg.WithAttributes(sqsmsg.UserAttributes(1)))
				out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(tgt.SourceURL), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range out.Messages {
					if aws.ToString(m.MessageId) != id {
						continue
					}
					if err := mustMover(t, f, tgt).Move(context.Background(), m, Provenance{Error: "other"}); err != nil {
						t.Fatal(err)
					}
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Moved < 3 || res.CameBack != 0 {
			t.Errorf("result = %+v; want the 2 and the new failure moved, none came back", res)
		}
		if n := len(f.Messages(tgt.DLQURL)); n != 0 {
			t.Errorf("the dead-letter queue holds %d messages, want 0", n)
		}
	})
}

func TestSourceMessageIDOnCopies(t *testing.T) {
	for _, n := range []int{0, 3, 4, 5, 9, 10} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			f, tgt := fakePair(t, "orders")
			id := f.MustSend(t, tgt.SourceURL, "x", sqsmsg.WithAttributes(sqsmsg.UserAttributes(n)))
			msg := sqsmsg.ReceiveOne(t, f, tgt.SourceURL)
			if err := mustMover(t, f, tgt).Move(context.Background(), msg, Provenance{Error: "boom", Handler: "h", Attempt: 2}); err != nil {
				t.Fatal(err)
			}
			attrs := f.Messages(tgt.DLQURL)[0].Attributes
			got := deadletter.SourceMessageID(attrs)
			switch {
			case n == 4 || n == 10: // separate provenance, or nothing, fills the ten
				if got != "" {
					t.Errorf("source message ID %q with %d attributes", got, len(attrs))
				}
			case got != id:
				t.Errorf("source message ID = %q, want %q (attributes %v)", got, id, keys(attrs))
			}
			if len(attrs) > 10 {
				t.Errorf("%d attributes", len(attrs))
			}
			if s := deadletter.StripProvenance(attrs); len(s) != n {
				t.Errorf("StripProvenance left %d attributes, want the user's %d", len(s), n)
			}
		})
	}
}

// A manual redrive sends a job back as a fresh one: the attributes the
// runtime's snooze relay put on it (the attempts its job spent, its first
// message ID) are removed, with or without its provenance, so the job has
// a whole retry budget again under its new ID; the sender's own
// attributes stay.
func TestRedriveStripsRelayAttributes(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepProvenance=%v", keep), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, tgt := fakePair(t, "orders")
				attrs := sqsmsg.UserAttributes(2)
				attrs[sched.OriginAttribute] = sched.OriginValue("first-id")
				attrs[sched.AttemptsAttribute] = sched.AttemptsValue(4)
				deadLetter(t, f, tgt, 3, attrs, failedWith("boom"))
				res, err := Redrive(context.Background(), f, tgt, RedriveOptions{Method: "manual", Rate: -1, KeepProvenance: keep})
				if err != nil || res.Moved != 3 {
					t.Fatalf("Redrive = %+v, %v; want 3 moved", res, err)
				}
				msgs := f.Messages(tgt.SourceURL)
				if len(msgs) != 3 {
					t.Fatalf("the source holds %d messages, want 3", len(msgs))
				}
				for _, m := range msgs {
					if _, ok := m.Attributes[sched.OriginAttribute]; ok {
						t.Errorf("message %s redriven with %s", m.ID, sched.OriginAttribute)
					}
					if _, ok := m.Attributes[sched.AttemptsAttribute]; ok {
						t.Errorf("message %s redriven with %s", m.ID, sched.AttemptsAttribute)
					}
					if m.Attributes["u0"].StringValue == nil || m.Attributes["u1"].StringValue == nil {
						t.Errorf("message %s lost the sender's attributes: %v", m.ID, keys(m.Attributes))
					}
					if _, ok := ParseProvenance(m.Attributes); ok != keep {
						t.Errorf("message %s: provenance kept %v, want %v", m.ID, ok, keep)
					}
				}
			})
		})
	}
}
