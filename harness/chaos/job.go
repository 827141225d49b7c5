package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"
)

// Kind is what a job's handler does.
type Kind string

// The kinds of job.
const (
	// Succeed: the handler works for Job.Work, records the success and
	// returns nil.
	Succeed Kind = "succeed"
	// Transient: the handler fails with an ordinary error while the
	// message's receive count is at most Job.Fails, then succeeds.
	Transient Kind = "transient"
	// Poison: the handler returns retry.Permanent; the job belongs in the
	// dead-letter queue with its provenance.
	Poison Kind = "poison"
	// Slow: the handler works for Job.Work, longer than the queue's
	// visibility timeout, so only the heartbeat keeps the message; it
	// stops early (no success) when its context ends.
	Slow Kind = "slow"
)

// kinds lists the kinds in report order.
func kinds() []Kind { return []Kind{Succeed, Transient, Poison, Slow} }

// Job is one unique job: the body of one message.
type Job struct {
	ID    string `json:"id"`
	Kind  Kind   `json:"kind"`
	Fails int    `json:"fails,omitempty"` // Transient: receives that fail
	// WorkMillis is how long the handler works, in milliseconds.
	WorkMillis int `json:"ms,omitempty"`
	// Group and Seq are the FIFO message group and the job's place in it
	// (0, 1, 2, … in the order sent).
	Group string `json:"group,omitempty"`
	Seq   int    `json:"seq,omitempty"`
}

// Work is how long the handler works.
func (j Job) Work() time.Duration { return time.Duration(j.WorkMillis) * time.Millisecond }

// Body encodes the job as a message body.
func (j Job) Body() string {
	b, _ := json.Marshal(j)
	return string(b)
}

// ParseJob decodes a message body.
func ParseJob(body string) (Job, error) {
	var j Job
	if err := json.Unmarshal([]byte(body), &j); err != nil || j.ID == "" {
		return Job{}, fmt.Errorf("chaos: body %.60q is not a chaos job", body)
	}
	return j, nil
}

// Mix is the share of each kind of job (the rest succeed at once).
type Mix struct {
	Transient float64 `json:"transient"`
	Poison    float64 `json:"poison"`
	Slow      float64 `json:"slow"`
	// MaxFails is the most receives a transient job fails (1 to MaxFails,
	// evenly). Zero: 2.
	MaxFails int `json:"maxFails"`
	// Slow is how long a slow job works; it must exceed the queue's
	// visibility timeout.
	SlowFor time.Duration `json:"slowFor"`
	// MaxWork is the most a succeeding or transient job works (0 to
	// MaxWork, evenly).
	MaxWork time.Duration `json:"maxWork"`
}

// MakeJobs returns n jobs drawn from mix with the given seed. With groups >
// 0 each job gets one of that many FIFO message groups at random and its
// place in that group.
func MakeJobs(n int, mix Mix, groups int, seed uint64) []Job {
	rng := rand.New(rand.NewPCG(seed, 0x6a6f6273))
	maxFails := mix.MaxFails
	if maxFails <= 0 {
		maxFails = 2
	}
	seqs := make([]int, max(groups, 1))
	jobs := make([]Job, n)
	for i := range jobs {
		j := Job{ID: fmt.Sprintf("j%06d", i), Kind: Succeed}
		switch r := rng.Float64(); {
		case r < mix.Poison:
			j.Kind = Poison
		case r < mix.Poison+mix.Transient:
			j.Kind, j.Fails = Transient, 1+rng.IntN(maxFails)
		case r < mix.Poison+mix.Transient+mix.Slow:
			j.Kind = Slow
		}
		switch j.Kind {
		case Slow:
			j.WorkMillis = int(mix.SlowFor / time.Millisecond)
		case Succeed, Transient:
			if mix.MaxWork > 0 {
				j.WorkMillis = rng.IntN(int(mix.MaxWork/time.Millisecond) + 1)
			}
		}
		if groups > 0 {
			g := rng.IntN(groups)
			j.Group, j.Seq = fmt.Sprintf("g%03d", g), seqs[g]
			seqs[g]++
		}
		jobs[i] = j
	}
	return jobs
}
