package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"golang.org/x/sync/errgroup"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

// UniqueConfig is the unique variant's part of a worker process's
// configuration (Endpoint and Table are filled in by Run): the worker's
// OnSettled hook also calls a unique.Store's Settled, on DynamoDB Local
// behind a fault proxy of its own.
type UniqueConfig struct {
	Endpoint    string        `json:"endpoint"` // the DynamoDB fault proxy's URL
	Table       string        `json:"table"`
	CallTimeout time.Duration `json:"callTimeout"` // the Store's Options.CallTimeout
	// ReleaseConcurrency is the Store's Options.ReleaseConcurrency (zero:
	// each release made in the hook, in turn); the process calls the
	// Store's Close once Run has returned.
	ReleaseConcurrency int `json:"releaseConcurrency,omitempty"`
}

// uniqueKeyPrefix makes a job's unique key: "job/<id>".
const uniqueKeyPrefix = "job/"

// releasesFile is where a unique worker process records the releases it
// makes (a ReleaseRecord before and after each; write, no fsync).
const releasesFile = ".releases.jsonl"

// ReleaseRecord is one step of a release of a job's key by Store.Settled
// (a Deleted or DeadLettered settlement): Phase "begin" when the hook
// passed the settlement to the Store, then, for each DeleteItem request of
// the key (the Store's retries included), "ok" when DynamoDB answered
// (the key deleted, or no longer this claim's) or "error".
type ReleaseRecord struct {
	Job     string    `json:"job"`
	Worker  string    `json:"w"`
	Phase   string    `json:"phase"`
	Outcome string    `json:"outcome"`
	Time    time.Time `json:"t"`
}

// uniqueWorker is a worker process's Store and its release records.
type uniqueWorker struct {
	name     string
	store    *unique.Store
	releases *appender
}

func newUniqueWorker(cfg WorkerConfig, name, base string, logger *slog.Logger) (*uniqueWorker, error) {
	uc := cfg.Unique
	if uc == nil || uc.Endpoint == "" || uc.Table == "" {
		return nil, errors.New("chaos: the unique variant needs WorkerConfig.Unique with the DynamoDB endpoint and the table; Run fills them in")
	}
	releases, err := openAppender(base + releasesFile)
	if err != nil {
		return nil, err
	}
	u := &uniqueWorker{name: name, releases: releases}
	client := &releaseWatch{Client: dynamoClient(uc.Endpoint, cfg.Region, name, cfg.Concurrency), w: u}
	u.store, err = unique.New(client, uc.Table, func(o *unique.Options) {
		o.CallTimeout, o.Logger, o.ReleaseConcurrency = uc.CallTimeout, logger, uc.ReleaseConcurrency
	})
	if err != nil {
		releases.close()
		return nil, err
	}
	return u, nil
}

// releaseWatch is a worker's DynamoDB client, recording the outcome of
// every DeleteItem request (each request of the Store's retry rule
// passes through it).
type releaseWatch struct {
	*dynamodb.Client
	w *uniqueWorker
}

func (r *releaseWatch) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := r.Client.DeleteItem(ctx, in, optFns...)
	rec := ReleaseRecord{Worker: r.w.name, Phase: "ok", Time: time.Now()}
	if k, ok := in.Key["key"].(*dbtypes.AttributeValueMemberS); ok {
		rec.Job = strings.TrimPrefix(k.Value, uniqueKeyPrefix)
	}
	var cf *dbtypes.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &cf) {
		rec.Phase = "error"
	}
	r.w.releases.write(rec)
	return out, err
}

// dynamoClient is a DynamoDB client on endpoint, as a user would build it.
func dynamoClient(endpoint, region, name string, conns int) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       region,
		AppID:        name,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConnsPerHost = 2*conns + 8
		}),
	})
}

// settled passes a settlement to the Store, recording the releases
// begun.
func (u *uniqueWorker) settled(s worker.Settlement) {
	if s.Message != nil && (s.Outcome == worker.Deleted || s.Outcome == worker.DeadLettered) {
		rec := ReleaseRecord{Worker: u.name, Phase: "begin", Outcome: s.Outcome.String(), Time: time.Now()}
		if j, err := parseMessageJob(s.Message.Body); err == nil {
			rec.Job = j.ID
		}
		u.releases.write(rec)
	}
	u.store.Settled(s)
}

// close waits, within wait, for the releases in flight (Store.Close),
// then closes the records.
func (u *uniqueWorker) close(wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := u.store.Close(ctx)
	u.releases.close()
	return err
}

// uniqueRun is the orchestrator's side of the unique variant: the keys
// table, the DynamoDB fault proxy, and what it found.
type uniqueRun struct {
	direct *dynamodb.Client
	*dynamoProxy
	ev *uniqueEvidence
}

// uniqueEvidence is what the unique variant adds to a run's evidence.
type uniqueEvidence struct {
	Table string `json:"table"`
	// Accepted and Refused count the orchestrator's sends: each job's key
	// sent twice before the workers start, the second send to be refused.
	Accepted int64 `json:"accepted"`
	Refused  int64 `json:"refused"`
	// Held lists the jobs whose key was still held once every worker had
	// stopped; Recovered how many of them a send at the documented bound
	// (send time + Retention + 1 hour) took over, and Left how many keys
	// were held after that (and the recovered keys' release).
	Held      []string                     `json:"held"`
	Recovered int64                        `json:"recovered"`
	Left      int                          `json:"left"`
	Counts    map[string]faultproxy.Counts `json:"counts"`
	Releases  []ReleaseRecord              `json:"-"`
}

// startUnique creates the keys table on cfg.DynamoDB and starts the
// DynamoDB fault proxy; it fills in wc.Unique.
func startUnique(ctx context.Context, cfg Config, wc *WorkerConfig) (*uniqueRun, error) {
	if cfg.DynamoDB == "" {
		return nil, errors.New("chaos: the unique variant needs DynamoDB: set Config.DynamoDB (AWS_ENDPOINT_URL_DYNAMODB; `make chaos` starts DynamoDB Local)")
	}
	if cfg.FIFO {
		return nil, errors.New("chaos: the unique variant runs on a standard queue")
	}
	u := &uniqueRun{direct: dynamoClient(cfg.DynamoDB, cfg.Region, "chaos", 16)}
	u.ev = &uniqueEvidence{Table: fmt.Sprintf("chaos-%s-%d-%d-keys", cfg.Variant, cfg.Seed, time.Now().UnixNano()%1e9)}
	if err := unique.CreateTable(ctx, u.direct, u.ev.Table, 0); err != nil {
		return nil, fmt.Errorf("chaos: creating table %s: %w", u.ev.Table, err)
	}
	d, err := startDynamoProxy(cfg, 0x756e71)
	if err != nil {
		return nil, err
	}
	u.dynamoProxy = d
	uc := UniqueConfig{}
	if cfg.Worker.Unique != nil {
		uc = *cfg.Worker.Unique
	}
	uc.Endpoint, uc.Table = d.proxy.URL, u.ev.Table
	wc.Unique = &uc
	return u, nil
}

// send sends every job through a unique.Store with the key "job/<id>",
// twice: the first send must be accepted, the second refused
// (ErrDuplicate, nothing sent). The orchestrator's DynamoDB calls go
// straight to DynamoDB Local, not through the proxy.
func (u *uniqueRun) send(ctx context.Context, client *sqs.Client, url string, jobs []Job, senders int) error {
	store, err := unique.New(u.direct, u.ev.Table, func(o *unique.Options) { o.Logger = slog.New(slog.DiscardHandler) })
	if err != nil {
		return err
	}
	p, err := producer.New(client, url)
	if err != nil {
		return err
	}
	defer p.Close(context.WithoutCancel(ctx))
	var g errgroup.Group
	g.SetLimit(cmp.Or(senders, 16))
	for _, j := range jobs {
		g.Go(func() error {
			k, m := unique.Key{Name: uniqueKeyPrefix + j.ID}, producer.Message{Body: j.Body()}
			if _, err := store.Send(ctx, p, k, m); err != nil {
				return fmt.Errorf("chaos: sending job %s: %w", j.ID, err)
			}
			if _, err := store.Send(ctx, p, k, m); !errors.Is(err, unique.ErrDuplicate) {
				return fmt.Errorf("chaos: the second send of job %s's key: %v; want unique.ErrDuplicate", j.ID, err)
			}
			return nil
		})
	}
	err = g.Wait()
	st := store.Stats()
	u.ev.Accepted, u.ev.Refused = st.Claimed, st.Refused
	return err
}

// finish, once every worker has stopped, lists the keys still held, then
// takes each over with a Store whose clock is past the documented bound
// (the default Retention of 14 days + 1 hour after the send) and releases
// it, and counts the keys held after that.
func (u *uniqueRun) finish(ctx context.Context, client *sqs.Client, dir string) (*uniqueEvidence, error) {
	if err := u.close(); err != nil {
		return nil, err
	}
	ev := u.ev
	ev.Counts = u.proxy.Counts()
	now := time.Now()
	held, err := u.heldKeys(ctx, now)
	if err != nil {
		return nil, err
	}
	for _, k := range held {
		ev.Held = append(ev.Held, strings.TrimPrefix(k, uniqueKeyPrefix))
	}
	sort.Strings(ev.Held)
	if len(held) > 0 {
		// The recovering sends go to a queue of their own.
		q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(strings.ReplaceAll(ev.Table, "-keys", "-recovery"))})
		if err != nil {
			return nil, fmt.Errorf("chaos: creating the recovery queue: %w", err)
		}
		defer client.DeleteQueue(context.WithoutCancel(ctx), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
		p, err := producer.New(client, aws.ToString(q.QueueUrl))
		if err != nil {
			return nil, err
		}
		defer p.Close(context.WithoutCancel(ctx))
		later := now.Add(14*24*time.Hour + time.Hour + time.Minute)
		store, err := unique.New(u.direct, ev.Table, func(o *unique.Options) {
			o.Logger, o.Now = slog.New(slog.DiscardHandler), func() time.Time { return later }
		})
		if err != nil {
			return nil, err
		}
		for _, k := range held {
			if _, err := store.Send(ctx, p, unique.Key{Name: k}, producer.Message{Body: "recovery"}); err != nil {
				return nil, fmt.Errorf("chaos: taking over key %s at the bound: %w", k, err)
			}
			if _, err := store.Release(ctx, k); err != nil {
				return nil, err
			}
		}
		ev.Recovered = store.Stats().Recovered
	}
	left, err := u.heldKeys(ctx, time.Now())
	if err != nil {
		return nil, err
	}
	ev.Left = len(left)
	if err := eachLineOf(dir, releasesFile, func(r ReleaseRecord) { ev.Releases = append(ev.Releases, r) }); err != nil {
		return nil, err
	}
	return ev, nil
}

// heldKeys lists the keys whose expiry ("until", epoch ms) is after now.
func (u *uniqueRun) heldKeys(ctx context.Context, now time.Time) ([]string, error) {
	var keys []string
	p := dynamodb.NewScanPaginator(u.direct, &dynamodb.ScanInput{TableName: aws.String(u.ev.Table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("chaos: reading table %s: %w", u.ev.Table, err)
		}
		for _, item := range page.Items {
			k, _ := item["key"].(*dbtypes.AttributeValueMemberS)
			until, _ := item["until"].(*dbtypes.AttributeValueMemberN)
			if k == nil || until == nil {
				continue
			}
			var ms int64
			fmt.Sscan(until.Value, &ms)
			if ms > now.UnixMilli() {
				keys = append(keys, k.Value)
			}
		}
	}
	return keys, nil
}

// eachLineOf reads the files named *suffix in dir, a T per line.
func eachLineOf[T any](dir, suffix string, fn func(T)) error {
	files, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		if err := eachLine(f, fn); err != nil {
			return err
		}
	}
	return nil
}

// The causes of a key held after the run.
const (
	// KeyReleaseCut: the release began (after SQS confirmed the delete or
	// the dead-letter move) in a process that died before DynamoDB
	// answered it: SIGKILLed, or exited after its Run returned with
	// settlements still queued for the hook.
	KeyReleaseCut = "release cut by the process's end"
	// KeyReleaseFailed: the Store's release failed (DynamoDB faults
	// outlasted its retries), logged and counted.
	KeyReleaseFailed = "release failed"
	// KeyNotHeard: no release began; the job's last run was in a process
	// that was SIGKILLed (after its delete reached SQS, before the
	// settlement was heard) or that dropped settlement events (its
	// Stats.HookDropped).
	KeyNotHeard = "settlement not heard (SIGKILL or dropped hook event)"
	// KeyPending: the job is still in the queue: its key is rightly held.
	KeyPending = "job still pending"
	// KeyUnexplained: none of the above.
	KeyUnexplained = "unexplained"
)

// UniqueReport is what the unique variant found.
type UniqueReport struct {
	Keys     int   `json:"keys"`
	Accepted int64 `json:"accepted"`
	Refused  int64 `json:"refused"`
	// HeldAtEnd counts the keys held once every worker had stopped, by
	// cause (HeldBy); Unexplained lists those no cause explains.
	HeldAtEnd   int            `json:"heldAtEnd"`
	HeldBy      map[string]int `json:"heldBy"`
	Unexplained []string       `json:"unexplained,omitempty"`
	// SucceededHeld lists the held keys of jobs whose handler succeeded
	// and whose release did not fail: Store.Middleware frees those before
	// the delete, so a kill cannot leave them held.
	SucceededHeld []string `json:"succeededHeld,omitempty"`
	// Recovered: held keys a send at the documented bound took over;
	// Left: keys held after that.
	Recovered int64 `json:"recovered"`
	Left      int   `json:"left"`
	// Releases counts the keys whose release DynamoDB answered, and
	// ReleasesFailed those whose release requests all failed.
	Releases       int                          `json:"releases"`
	ReleasesFailed int                          `json:"releasesFailed"`
	Store          unique.Stats                 `json:"store"`
	Requests       map[string]faultproxy.Counts `json:"requests"`
}

// uniqueKeys reconciles the unique variant's evidence.
func (r *Report) uniqueKeys(ev evidence) {
	ue := ev.Unique
	if ue == nil {
		return
	}
	ur := &UniqueReport{Keys: len(ev.Jobs), Accepted: ue.Accepted, Refused: ue.Refused, HeldAtEnd: len(ue.Held), HeldBy: map[string]int{},
		Recovered: ue.Recovered, Left: ue.Left, Requests: ue.Counts}
	r.Unique = ur
	for _, e := range ev.Files.Exits {
		if s := e.Unique; s != nil {
			ur.Store.Claimed += s.Claimed
			ur.Store.Released += s.Released
			ur.Store.Refreshed += s.Refreshed
			ur.Store.ReleaseErrors += s.ReleaseErrors
			ur.Store.Requests += s.Requests
			ur.Store.RequestErrors += s.RequestErrors
		}
	}
	type steps struct {
		begun []string // the workers that passed a settlement to the Store
		ok    bool     // a DeleteItem of the key was answered
		errs  int      // DeleteItem requests that failed
	}
	rel := map[string]*steps{}
	for _, rr := range ue.Releases {
		s := rel[rr.Job]
		if s == nil {
			s = &steps{}
			rel[rr.Job] = s
		}
		switch rr.Phase {
		case "begin":
			s.begun = append(s.begun, rr.Worker)
		case "ok":
			s.ok = true
		case "error":
			s.errs++
		}
	}
	for _, s := range rel {
		if s.ok {
			ur.Releases++
		} else if len(s.begun) > 0 && s.errs > 0 {
			ur.ReleasesFailed++
		}
	}
	lastRun := map[string]RunRecord{} // job → its last run (the records come by worker, not by time)
	for _, run := range ev.Files.Runs {
		if last, ok := lastRun[run.Job]; !ok || run.Time.After(last.Time) {
			lastRun[run.Job] = run
		}
	}
	pending := map[string]bool{}
	for _, id := range ev.Pending {
		pending[id] = true
	}
	killed := func(w string) bool { return ev.Procs[w].Signal == "SIGKILL" }
	dropped := func(w string) bool { return ev.Files.Exits[w].Stats.HookDropped > 0 }
	// cut: the process died with the release begun and not answered: it
	// was SIGKILLed, or its Run returned with settlements still queued
	// for the hook (Stats.HookDropped) and the process exited.
	cut := func(w string) bool { return killed(w) || dropped(w) }
	succeeded := map[string]bool{}
	for _, s := range ev.Files.Successes {
		succeeded[s.Job] = true
	}
	for _, job := range ue.Held {
		cause := KeyUnexplained
		s := rel[job]
		switch {
		case pending[job]:
			cause = KeyPending
		case s != nil && !s.ok && s.errs > 0:
			cause = KeyReleaseFailed
		case s != nil && !s.ok && anyOf(s.begun, cut):
			cause = KeyReleaseCut
		case s == nil && cut(lastRun[job].Worker):
			cause = KeyNotHeard
		}
		ur.HeldBy[cause]++
		if succeeded[job] && (cause == KeyReleaseCut || cause == KeyNotHeard) {
			ur.SucceededHeld = append(ur.SucceededHeld, job)
		}
		if cause == KeyUnexplained {
			ur.Unexplained = append(ur.Unexplained, job)
		}
	}
}

func anyOf(names []string, fn func(string) bool) bool {
	for _, n := range names {
		if fn(n) {
			return true
		}
	}
	return false
}

// uniqueFailures are the unique variant's broken guarantees.
func (r *Report) uniqueFailures() []string {
	ur := r.Unique
	if ur == nil {
		return nil
	}
	var f []string
	if ur.Accepted != int64(ur.Keys) || ur.Refused != int64(ur.Keys) {
		f = append(f, fmt.Sprintf("unique: %d first sends accepted and %d second sends refused; want %d each", ur.Accepted, ur.Refused, ur.Keys))
	}
	if n := len(ur.Unexplained); n > 0 {
		f = append(f, fmt.Sprintf("unique: %d keys held after the run that no kill, failed release or pending job explains: %v", n, ur.Unexplained[:min(n, 10)]))
	}
	if n := len(ur.SucceededHeld); n > 0 {
		f = append(f, fmt.Sprintf("unique: %d keys of jobs whose handler succeeded were held after the run, their release cut by a kill (Store.Middleware frees them before the delete): %v", n, ur.SucceededHeld[:min(n, 10)]))
	}
	if ur.Recovered != int64(ur.HeldAtEnd) {
		f = append(f, fmt.Sprintf("unique: %d of the %d keys held after the run were taken over at the documented bound", ur.Recovered, ur.HeldAtEnd))
	}
	if ur.Left > 0 {
		f = append(f, fmt.Sprintf("unique: %d keys left held after the bound", ur.Left))
	}
	return f
}

// uniqueText is the unique variant's part of the report text.
func (r *Report) uniqueText() string {
	ur := r.Unique
	if ur == nil {
		return ""
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("unique: DynamoDB faults: %s", faultsText(r.Config.DynamoFaults))
	p("  keys: %d; first sends accepted %d, second sends refused %d (nothing sent)", ur.Keys, ur.Accepted, ur.Refused)
	p("  releases by the workers: %d ok, %d failed; store stats (processes that exited through Run): released %d, refreshed %d, release errors %d, requests %d (%d errors)",
		ur.Releases, ur.ReleasesFailed, ur.Store.Released, ur.Store.Refreshed, ur.Store.ReleaseErrors, ur.Store.Requests, ur.Store.RequestErrors)
	var by []string
	for c, n := range ur.HeldBy {
		by = append(by, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(by)
	p("  keys held after the run: %d (%s); taken over at the bound: %d; left held after it: %d", ur.HeldAtEnd, strings.Join(by, ", "), ur.Recovered, ur.Left)
	names := make([]string, 0, len(ur.Requests))
	for n := range ur.Requests {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := ur.Requests[n]
		var faults []string
		for _, k := range []faultproxy.Kind{faultproxy.Throttle, faultproxy.ServerError, faultproxy.Reset, faultproxy.DropResponse, faultproxy.Hang, faultproxy.UpstreamError, faultproxy.ClientGone} {
			if v := c.Faults[k]; v > 0 {
				faults = append(faults, fmt.Sprintf("%d %s", v, k))
			}
		}
		p("  DynamoDB %-12s %7d  faults: %s", n, c.Requests, strings.Join(faults, ", "))
	}
	return b.String()
}

// uniqueVariant makes c the unique variant: the chaos variant's jobs,
// SQS faults and kills, each job sent with a unique key (twice: the
// second send refused), the workers freeing the keys through a
// unique.Store (its Middleware around the handler, its Settled as the
// settlement hook) on DynamoDB Local behind a fault proxy with the same
// faults. Every job must be done or dead-lettered, and every key free at
// the end, or held for a cause the run shows (a SIGKILL cut a dead-letter
// settlement's release, a release failed; never a succeeded job's key)
// and taken over by a send at the documented bound.
func uniqueVariant(c *Config) {
	c.Jobs, c.Worker.Concurrency = 3000, 8
	c.DrainTimeout = 5 * time.Minute
	c.Faults = chaosFaults()
	c.DynamoFaults = chaosFaults()
	c.Kills = Kills{MinEvery: time.Second, MaxEvery: 4 * time.Second, KillShare: 0.5}
	c.Worker.Unique = &UniqueConfig{CallTimeout: 2 * time.Second, ReleaseConcurrency: 16}
}
