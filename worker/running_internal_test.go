package worker

import (
	"context"
	"errors"
	"testing"
	"unsafe"
)

// The handlers' contexts are not children of a cancellable context of the
// run: the shutdown deadline reaches them through the running list. A
// handler whose context was made before the deadline but which joined the
// list only after it is cancelled too, and one that left is not.
func TestShutdownCancelsEveryRunningHandler(t *testing.T) {
	r := &run{}
	var jobs [3]job
	ctxs := make([]context.Context, len(jobs))
	for i := range jobs {
		ctxs[i], _ = jobs[i].handlerContext(context.Background())
	}
	r.mu.Lock()
	r.joinLocked(&jobs[0])
	r.joinLocked(&jobs[1])
	r.leaveLocked(&jobs[1]) // its handler returned
	r.mu.Unlock()

	r.cancelHandlers(ErrShutdown)
	if c := context.Cause(ctxs[0]); !errors.Is(c, ErrShutdown) {
		t.Errorf("running handler: cause %v, want ErrShutdown", c)
	}
	if err := ctxs[1].Err(); err != nil {
		t.Errorf("handler that had returned: context ended (%v), want it left alone", err)
	}

	r.mu.Lock()
	r.joinLocked(&jobs[2]) // reached its handler after the deadline
	r.mu.Unlock()
	if c := context.Cause(ctxs[2]); !errors.Is(c, ErrShutdown) {
		t.Errorf("handler started after the deadline: cause %v, want ErrShutdown", c)
	}
	if r.running != &jobs[2] || jobs[2].next != &jobs[0] || jobs[0].next != nil || jobs[0].prev != &jobs[2] {
		t.Errorf("running list is not jobs 2, 0")
	}
}

// A receive's jobs, leases included, are one allocation of ten: it must
// stay within the 12,288-byte size class (10 jobs and the 8-byte header
// the runtime keeps for objects over 512 bytes with pointers), or every
// receive costs a 13,568-byte block.
func TestJobSize(t *testing.T) {
	if n := 10*unsafe.Sizeof(job{}) + 8; n > 12288 {
		t.Fatalf("ten jobs take %d bytes with the header: over the 12,288-byte size class (a job is %d bytes); move a field out of job or settle.Job", n, unsafe.Sizeof(job{}))
	}
}
