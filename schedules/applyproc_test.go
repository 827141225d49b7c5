package schedules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/sqsworker/sqsworker/harness/schedulerhttp"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
	"github.com/sqsworker/sqsworker/sqstest"
)

// applyChildEnv, set to "ENDPOINT GO-FILE RESULT-FILE", makes the test
// binary a deploy step: it waits for GO-FILE, applies declaredSet through
// the SDK's Scheduler client at ENDPOINT, and writes the changes it made
// to RESULT-FILE.
const applyChildEnv = "SCHEDULES_APPLY_CHILD"

const (
	applyGroup = "reports"
	applyQueue = "arn:aws:sqs:us-east-1:123456789012:reports"
)

// declaredSet is what every process applies: 24 schedules.
func declaredSet() []schedules.Schedule {
	var out []schedules.Schedule
	for i := range 24 {
		out = append(out, schedules.Schedule{Name: fmt.Sprintf("s%02d", i), Expression: fmt.Sprintf("cron(%d 3 * * ? *)", i),
			TimeZone: "Europe/Paris", Queue: applyQueue, Body: fmt.Sprintf(`{"job":%d}`, i), Overlap: "skip"})
	}
	return out
}

func applyOptions(o *schedules.Options) {
	o.Group, o.RoleARN = applyGroup, "arn:aws:iam::123456789012:role/scheduler"
	o.DLQ = "arn:aws:sqs:us-east-1:123456789012:reports-scheduler-dlq"
}

func runApplyChild(raw string) error {
	var endpoint, goFile, result string
	if _, err := fmt.Sscan(raw, &endpoint, &goFile, &result); err != nil {
		return err
	}
	client := scheduler.New(scheduler.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(goFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no go signal")
		}
	}
	changes, err := schedules.Apply(context.Background(), client, declaredSet(), applyOptions)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(changes)
	return os.WriteFile(result, b, 0o644)
}

// The acceptance: 4 OS processes reconciling the same declared set
// at once, each through the SDK's own Scheduler client (REST-JSON over
// HTTP to an in-memory Scheduler): the end state equals the declared set,
// the schedules not declared are deleted (once each at Scheduler; the
// other processes find them gone), the changed ones updated and the
// missing ones created, one schedule per name (a create racing another
// with the same content succeeds by its ClientToken, so each process
// reports it).
func TestConcurrentApplyProcesses(t *testing.T) {
	s, err := schedulestest.New(sqstest.For(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := schedulerhttp.New(s)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx := t.Context()

	// Before the deploy: s00-s07 as declared, s08-s15 with another
	// expression, s16-s23 missing, and x00-x05 no longer declared.
	var before []schedules.Schedule
	for i, d := range declaredSet()[:16] {
		if i >= 8 {
			d.Expression = "rate(1 hour)"
		}
		before = append(before, d)
	}
	for i := range 6 {
		before = append(before, schedules.Schedule{Name: fmt.Sprintf("x%02d", i), Expression: "rate(1 day)", Queue: applyQueue, Body: "old"})
	}
	if _, err := schedules.Apply(ctx, s, before, applyOptions); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	var cmds []*exec.Cmd
	for i := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s", applyChildEnv, hs.URL, goFile, filepath.Join(dir, fmt.Sprint("result-", i))))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	time.Sleep(300 * time.Millisecond) // the processes start and wait for the signal
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
	}

	// The end state is the declared set.
	if changes, err := schedules.Diff(ctx, s, declaredSet(), applyOptions); err != nil || len(changes) != 0 {
		t.Fatalf("after 4 concurrent applies Diff reports %v, %v; want none", changes, err)
	}
	list, err := schedules.List(ctx, s, func(o *schedules.Options) { o.Group = applyGroup })
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range list {
		names = append(names, l.Name)
	}
	var want []string
	for _, d := range declaredSet() {
		want = append(want, d.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("the group holds %v, want %v", names, want)
	}
	// What the processes did: every change made by at least one; deletes
	// and creates took effect once at Scheduler.
	made := map[string]int{}
	for i := range 4 {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprint("result-", i)))
		if err != nil {
			t.Fatal(err)
		}
		var cs []schedules.Change
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			made[c.Action]++
		}
	}
	n := srv.Counts()
	t.Logf("changes reported by the 4 processes: %v; Scheduler requests: %v", made, n)
	if n["DeleteSchedule"] != 6 || made["delete"] != 6 {
		t.Errorf("x00-x05 deleted %d times at Scheduler (%d reported), want 6", n["DeleteSchedule"], made["delete"])
	}
	if made["create"] < 8 || made["update"] < 8 {
		t.Errorf("reported %v; want at least 8 creates and 8 updates", made)
	}
	if n["CreateSchedule"]+n["CreateSchedule:ConflictException"] < 8 {
		t.Errorf("Scheduler requests %v", n)
	}
}
