package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/idempotency"
)

// ModeIdempotency is WorkerConfig.Mode for the idempotency variant: the
// worker's handler is wrapped by an idempotency.Guard on DynamoDB (behind
// a fault proxy of its own), and each job's side effect is a conditional
// write to a second table.
const ModeIdempotency = "idempotency"

// IdemConfig is the idempotency variant's part of a worker process's
// configuration (Endpoint and the tables are filled in by Run).
type IdemConfig struct {
	Endpoint    string `json:"endpoint"`    // the DynamoDB fault proxy's URL
	Table       string `json:"table"`       // the Guard's records
	EffectTable string `json:"effectTable"` // the jobs' side effects
	// LockMargin and CallTimeout are the Guard's options.
	LockMargin  time.Duration `json:"lockMargin"`
	CallTimeout time.Duration `json:"callTimeout"`
}

// idemKeyPrefix is the Guard's Options.KeyPrefix; the key is the job's ID.
const idemKeyPrefix = "chaos"

// The files an idempotency worker process writes besides the others.
const (
	effectsFile     = ".effects.jsonl"     // an EffectRecord per side-effect attempt (write, no fsync)
	completionsFile = ".completions.jsonl" // a CompletionRecord per completion the Guard wrote (write, no fsync)
)

// EffectResult is what one attempt at a job's side effect found.
type EffectResult string

// The results of a side-effect attempt.
const (
	// EffectApplied: the conditional write created the effect item (or
	// found the item this very run had created, its first answer lost).
	EffectApplied EffectResult = "applied"
	// EffectPresent: another run had already applied the job's side
	// effect: this run is a re-run of a job whose effect was made.
	EffectPresent EffectResult = "present"
	// EffectError: the write failed (or its answer never came): it may or
	// may not have been applied; the run fails and is retried.
	EffectError EffectResult = "error"
)

// EffectRecord is one attempt at a job's side effect: a conditional
// PutItem of "effect#<job>" (only if absent) carrying the run's token.
type EffectRecord struct {
	Job    string       `json:"job"`
	Worker string       `json:"w"`
	Run    string       `json:"run"` // this run's token: "<worker>/<n>"
	Result EffectResult `json:"result"`
	// Owner is the token of the run that had applied the effect (present).
	Owner string `json:"owner,omitempty"`
	// OwnAnswerLost: the write found the item this run had created (the
	// first answer was lost and the SDK tried again).
	OwnAnswerLost bool      `json:"ownAnswerLost,omitempty"`
	Err           string    `json:"err,omitempty"`
	Time          time.Time `json:"t"` // when the attempt began
}

// CompletionRecord is one completion the Guard wrote (an UpdateItem
// setting the record COMPLETED) and its answer, or (Overwrote) a lock
// taken by replacing a COMPLETED record, which a Guard must never do.
type CompletionRecord struct {
	Job       string    `json:"job"`
	Worker    string    `json:"w"`
	OK        bool      `json:"ok"`
	Err       string    `json:"err,omitempty"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Overwrote bool      `json:"overwrote,omitempty"`
}

// idemWorker is a worker process's Guard and side effect.
type idemWorker struct {
	name        string
	client      *dynamodb.Client
	guard       *idempotency.Guard
	effectTable string
	callTimeout time.Duration
	effects     *appender
	completions *appender
	seq         atomic.Int64
}

func newIdemWorker(cfg WorkerConfig, name, base string, logger *slog.Logger) (*idemWorker, error) {
	ic := cfg.Idem
	if ic == nil || ic.Endpoint == "" || ic.Table == "" || ic.EffectTable == "" {
		return nil, errors.New("chaos: the idempotency mode needs WorkerConfig.Idem with the DynamoDB endpoint and both tables; Run fills them in")
	}
	effects, err := openAppender(base + effectsFile)
	if err != nil {
		return nil, err
	}
	completions, err := openAppender(base + completionsFile)
	if err != nil {
		effects.close()
		return nil, err
	}
	// The client a user would build: the SDK's default retryer.
	client := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(ic.Endpoint),
		Region:       cfg.Region,
		AppID:        name,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConnsPerHost = 2*cfg.Concurrency + 8
		}),
	})
	w := &idemWorker{name: name, client: client, effectTable: ic.EffectTable, callTimeout: ic.CallTimeout, effects: effects, completions: completions}
	w.guard, err = idempotency.New(&watchedDynamo{API: client, w: w}, ic.Table, func(o *idempotency.Options) {
		o.KeyPrefix = idemKeyPrefix
		o.Key = idempotency.JSONKey("id")
		o.LockMargin, o.CallTimeout = ic.LockMargin, ic.CallTimeout
		o.Logger = logger
	})
	if err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *idemWorker) close() {
	w.effects.close()
	w.completions.close()
}

// effect is the job's side effect: put "effect#<job>" only if absent. An
// item already there (made by another run) is the effect done: the run
// succeeds without making it again, and the attempt is recorded as a
// re-run.
func (w *idemWorker) effect(ctx context.Context, job Job) error {
	rec := EffectRecord{Job: job.ID, Worker: w.name, Run: fmt.Sprintf("%s/%d", w.name, w.seq.Add(1)), Time: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, w.callTimeout)
	_, err := w.client.PutItem(cctx, &dynamodb.PutItemInput{
		TableName: aws.String(w.effectTable),
		Item: map[string]types.AttributeValue{
			"key": &types.AttributeValueMemberS{Value: effectKey(job.ID)},
			"run": &types.AttributeValueMemberS{Value: rec.Run},
			"at":  &types.AttributeValueMemberN{Value: fmt.Sprint(rec.Time.UnixMilli())},
		},
		ConditionExpression:                 aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames:            map[string]string{"#k": "key"},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	cancel()
	var failed *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		rec.Result = EffectApplied
	case errors.As(err, &failed):
		owner := ""
		if v, ok := failed.Item["run"].(*types.AttributeValueMemberS); ok {
			owner = v.Value
		}
		rec.Result, rec.Owner = EffectPresent, owner
		if owner == rec.Run {
			rec.Result, rec.Owner, rec.OwnAnswerLost = EffectApplied, "", true
		}
	default:
		rec.Result, rec.Err = EffectError, err.Error()
	}
	if werr := w.effects.write(rec); werr != nil {
		return fmt.Errorf("chaos: recording the side effect: %w", werr)
	}
	if rec.Result == EffectError {
		return fmt.Errorf("chaos: the side effect of job %s: %w", job.ID, err)
	}
	return nil
}

func effectKey(job string) string { return "effect#" + job }

// watchedDynamo is the Guard's DynamoDB client, recording every completion
// it writes and any lock it takes over a completed record.
type watchedDynamo struct {
	idempotency.API
	w *idemWorker
}

// UpdateItem records the completions (an update that sets the status to
// COMPLETED) with their answers.
func (d *watchedDynamo) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	completing := false
	for _, v := range in.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == string(idempotency.Completed) {
			completing = true
		}
	}
	start := time.Now()
	out, err := d.API.UpdateItem(ctx, in, optFns...)
	if completing {
		rec := CompletionRecord{Job: jobOfKey(in.Key), Worker: d.w.name, OK: err == nil, Start: start, End: time.Now()}
		if err != nil {
			rec.Err = err.Error()
		}
		d.w.completions.write(rec)
	}
	return out, err
}

// PutItem records a lock taken over a COMPLETED record.
func (d *watchedDynamo) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	start := time.Now()
	out, err := d.API.PutItem(ctx, in, optFns...)
	if err == nil && out != nil {
		if s, ok := out.Attributes["status"].(*types.AttributeValueMemberS); ok && s.Value == string(idempotency.Completed) {
			d.w.completions.write(CompletionRecord{Job: jobOfKey(in.Item), Worker: d.w.name, OK: true, Start: start, End: time.Now(), Overwrote: true})
		}
	}
	return out, err
}

// jobOfKey is the job ID of a Guard record's key.
func jobOfKey(item map[string]types.AttributeValue) string {
	if v, ok := item["key"].(*types.AttributeValueMemberS); ok {
		return strings.TrimPrefix(v.Value, idemKeyPrefix+"#")
	}
	return ""
}

// idemRun is the orchestrator's side of the idempotency variant: the
// tables and the DynamoDB fault proxy.
type idemRun struct {
	direct *dynamodb.Client
	*dynamoProxy
	ev *idemEvidence
}

// idemEvidence is what the idempotency variant adds to a run's evidence:
// the tables as they were at the end, what the DynamoDB proxy did, and
// (read from the worker files) every side-effect attempt and completion.
type idemEvidence struct {
	Table       string `json:"table"`
	EffectTable string `json:"effectTable"`
	// Effects maps each job whose side effect was made to the token of the
	// run that made it; Records each job with a Guard record to its status.
	Effects     map[string]string            `json:"effects"`
	Records     map[string]string            `json:"records"`
	Counts      map[string]faultproxy.Counts `json:"counts"`
	Attempts    []EffectRecord               `json:"-"`
	Completions []CompletionRecord           `json:"-"`
}

// startIdem creates the tables on cfg.DynamoDB and starts the DynamoDB
// fault proxy; it fills in wc.Idem.
func startIdem(ctx context.Context, cfg Config, wc *WorkerConfig) (*idemRun, error) {
	if cfg.DynamoDB == "" {
		return nil, errors.New("chaos: the idempotency variant needs DynamoDB: set Config.DynamoDB (AWS_ENDPOINT_URL_DYNAMODB; `make chaos` starts DynamoDB Local)")
	}
	direct := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(cfg.DynamoDB), Region: cfg.Region,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	name := fmt.Sprintf("chaos-%s-%d-%d", cfg.Variant, cfg.Seed, time.Now().UnixNano()%1e9)
	ev := &idemEvidence{Table: name + "-records", EffectTable: name + "-effects"}
	for _, t := range []string{ev.Table, ev.EffectTable} {
		if err := idempotency.CreateTable(ctx, direct, t); err != nil {
			return nil, fmt.Errorf("chaos: creating table %s: %w", t, err)
		}
	}
	ir := &idemRun{direct: direct, ev: ev}
	ir.warm(ctx, ev.EffectTable)
	d, err := startDynamoProxy(cfg, 0xd7a0)
	if err != nil {
		return nil, err
	}
	ir.dynamoProxy = d
	ic := IdemConfig{}
	if cfg.Worker.Idem != nil {
		ic = *cfg.Worker.Idem
	}
	ic.Endpoint, ic.Table, ic.EffectTable = d.proxy.URL, ev.Table, ev.EffectTable
	wc.Idem = &ic
	return ir, nil
}

// warmFor is how long startIdem warms DynamoDB Local up.
const warmFor = 5 * time.Second

// warm sends DynamoDB Local conditional writes like the Guard's, 8 at a
// time, for warmFor: a cold DynamoDB Local (a fresh JVM) takes seconds per
// call at first, which would time out most of the first minute's calls and
// measure the JVM's warm-up rather than the Guard. The warm-up items are
// deleted again.
func (ir *idemRun) warm(ctx context.Context, table string) {
	wctx, cancel := context.WithTimeout(ctx, warmFor)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; wctx.Err() == nil; i++ {
				key := map[string]types.AttributeValue{"key": &types.AttributeValueMemberS{Value: fmt.Sprintf("warm#%d#%d", g, i)}}
				ir.direct.PutItem(wctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key,
					ConditionExpression: aws.String("attribute_not_exists(#k)"), ExpressionAttributeNames: map[string]string{"#k": "key"}})
				ir.direct.DeleteItem(context.WithoutCancel(wctx), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key})
			}
		})
	}
	wg.Wait()
}

// finish stops the proxy and reads both tables; call it once every worker
// has stopped.
func (ir *idemRun) finish(ctx context.Context) (*idemEvidence, error) {
	if err := ir.close(); err != nil {
		return nil, err
	}
	ev := ir.ev
	ev.Counts = ir.proxy.Counts()
	ev.Effects, ev.Records = map[string]string{}, map[string]string{}
	for _, t := range []struct {
		table string
		into  func(key string, item map[string]types.AttributeValue)
	}{
		{ev.EffectTable, func(key string, item map[string]types.AttributeValue) {
			if v, ok := item["run"].(*types.AttributeValueMemberS); ok {
				ev.Effects[strings.TrimPrefix(key, "effect#")] = v.Value
			}
		}},
		{ev.Table, func(key string, item map[string]types.AttributeValue) {
			if v, ok := item["status"].(*types.AttributeValueMemberS); ok {
				ev.Records[strings.TrimPrefix(key, idemKeyPrefix+"#")] = v.Value
			}
		}},
	} {
		p := dynamodb.NewScanPaginator(ir.direct, &dynamodb.ScanInput{TableName: aws.String(t.table), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("chaos: reading table %s: %w", t.table, err)
			}
			for _, item := range page.Items {
				if k, ok := item["key"].(*types.AttributeValueMemberS); ok {
					t.into(k.Value, item)
				}
			}
		}
	}
	return ev, nil
}

// readIdemFiles reads the side-effect attempts and completions the named
// worker processes recorded in dir into ev.
func readIdemFiles(dir string, names []string, ev *idemEvidence) error {
	ev.Attempts, ev.Completions = nil, nil
	for _, name := range names {
		base := filepath.Join(dir, name)
		a, err := readLines[EffectRecord](base + effectsFile)
		if err != nil {
			return err
		}
		c, err := readLines[CompletionRecord](base + completionsFile)
		if err != nil {
			return err
		}
		ev.Attempts, ev.Completions = append(ev.Attempts, a...), append(ev.Completions, c...)
	}
	return nil
}

// IdemCause is why a job's handler ran again after its side effect had
// been made (a re-run the Guard could not prevent).
type IdemCause string

// The causes of a re-run, from the evidence of the run that made the side
// effect.
const (
	// IdemKilled: that run's process was SIGKILLed between the side effect
	// and the completion record: the window of doubt idempotency's package
	// documentation describes. The lock expired and the job ran again.
	IdemKilled IdemCause = "killed between its side effect and its completion record"
	// IdemStopped: that run's process was stopped (SIGTERM) after the side
	// effect and exited before the completion record was written.
	IdemStopped IdemCause = "stopped (SIGTERM) between its side effect and its completion record"
	// IdemCompleteFailed: that run's completion could not be written
	// (DynamoDB failed it beyond the SDK's retries, or its lock was gone);
	// the Guard counted it (Stats.CompleteFailed) and logged it.
	IdemCompleteFailed IdemCause = "its completion could not be recorded"
	// IdemEffectUnknown: that run's side-effect write failed as far as it
	// knew (the answer was lost, the call timed out, or its context ended)
	// although it was applied; the run failed, its record was removed, and
	// the retry found the effect made.
	IdemEffectUnknown IdemCause = "its side effect's answer was lost and the run failed"
	// IdemUnexplained: none of these; a bug until shown otherwise.
	IdemUnexplained IdemCause = "unexplained"
)

func idemCauses() []IdemCause {
	return []IdemCause{IdemKilled, IdemStopped, IdemCompleteFailed, IdemEffectUnknown, IdemUnexplained}
}

// IdemReport is what the idempotency variant adds to a Report.
type IdemReport struct {
	// Effects counts the jobs whose side effect was made (items in the
	// effect table); each is made at most once by its conditional write.
	Effects int `json:"effects"`
	// DoneWithoutEffect counts jobs recorded done without an effect item;
	// EffectNotDone jobs with an effect that are neither done nor pending
	// (poison jobs included); both break the guarantee.
	DoneWithoutEffect int `json:"doneWithoutEffect"`
	EffectNotDone     int `json:"effectNotDone"`
	// Attempts counts the side-effect writes the handlers made; Reruns
	// those that found the effect made by another run (the job ran again
	// after its effect), by cause; OwnAnswerLost those that found their
	// own write (its first answer lost, the SDK retried); Errors those that
	// failed (the run was retried).
	Attempts      int               `json:"attempts"`
	Reruns        int               `json:"reruns"`
	RerunsBy      map[IdemCause]int `json:"rerunsBy"`
	OwnAnswerLost int               `json:"ownAnswerLost"`
	Errors        int               `json:"errors"`
	// RerunsOfCompleted counts handler runs that began after a completion
	// of their job had been confirmed to a Guard; OverwroteCompleted locks
	// taken over a COMPLETED record. Both must be 0.
	RerunsOfCompleted  int `json:"rerunsOfCompleted"`
	OverwroteCompleted int `json:"overwroteCompleted"`
	// Completions counts the completions the Guards wrote that DynamoDB
	// confirmed, CompletionsFailed those that failed (the Guard's
	// CompleteFailed: an error, or the lock was no longer the run's);
	// NotCompleted counts done jobs whose record is not COMPLETED at the
	// end (a completion lost in the window of doubt, and no later run).
	Completions       int `json:"completions"`
	CompletionsFailed int `json:"completionsFailed"`
	NotCompleted      int `json:"notCompleted"`
	// Guard sums the Guards' Stats of the processes that exited through Run.
	Guard    idempotency.Stats            `json:"guard"`
	Requests map[string]faultproxy.Counts `json:"requests"`
	Examples []string                     `json:"examples,omitempty"`
}

// idempotency reconciles the idempotency variant's evidence into r.
func (r *Report) idempotency(ev evidence) {
	ie := ev.Idem
	if ie == nil {
		return
	}
	ir := &IdemReport{RerunsBy: map[IdemCause]int{}, Requests: ie.Counts, Guard: idempotency.Stats{Requests: map[string]int64{}}}
	r.Idempotency = ir
	example := func(format string, args ...any) {
		if len(ir.Examples) < 20 {
			ir.Examples = append(ir.Examples, fmt.Sprintf(format, args...))
		}
	}
	byID := map[string]Job{}
	for _, j := range ev.Jobs {
		byID[j.ID] = j
	}
	done := map[string]bool{}
	for _, s := range ev.Files.Successes {
		done[s.Job] = true
	}
	pending := map[string]bool{}
	for _, id := range ev.Pending {
		pending[id] = true
	}
	for id := range ie.Effects {
		if _, ok := byID[id]; !ok {
			continue
		}
		ir.Effects++
		if !done[id] && !pending[id] {
			ir.EffectNotDone++
			example("%s (%s): its side effect was made, yet it is neither done nor pending", id, byID[id].Kind)
		}
	}
	for id := range done {
		if _, ok := ie.Effects[id]; !ok {
			ir.DoneWithoutEffect++
			example("%s: done without its side effect", id)
		}
		if ie.Records[id] != string(idempotency.Completed) {
			ir.NotCompleted++
		}
	}

	// Completions: the first confirmed per job; no handler run may begin
	// after it.
	firstDone := map[string]time.Time{}
	completed := map[string]map[string]bool{} // job → worker → confirmed (true) or failed (false seen)
	for _, c := range ie.Completions {
		if c.Overwrote {
			ir.OverwroteCompleted++
			example("%s: %s took the lock over its COMPLETED record at %s", c.Job, c.Worker, c.End.Format("15:04:05.000"))
			continue
		}
		if completed[c.Job] == nil {
			completed[c.Job] = map[string]bool{}
		}
		if !c.OK {
			ir.CompletionsFailed++
			if _, ok := completed[c.Job][c.Worker]; !ok {
				completed[c.Job][c.Worker] = false
			}
			continue
		}
		ir.Completions++
		completed[c.Job][c.Worker] = true
		if t, ok := firstDone[c.Job]; !ok || c.End.Before(t) {
			firstDone[c.Job] = c.End
		}
	}
	for _, run := range ev.Files.Runs {
		if t, ok := firstDone[run.Job]; ok && run.Time.After(t) {
			ir.RerunsOfCompleted++
			example("%s: %s began a run at %s, after its completion was confirmed at %s", run.Job, run.Worker, run.Time.Format("15:04:05.000"), t.Format("15:04:05.000"))
		}
	}

	// Side-effect attempts, and why each re-run happened.
	byRun := map[string]EffectRecord{}
	for _, a := range ie.Attempts {
		byRun[a.Run] = a
	}
	sort.Slice(ie.Attempts, func(i, j int) bool { return ie.Attempts[i].Time.Before(ie.Attempts[j].Time) })
	for _, a := range ie.Attempts {
		ir.Attempts++
		switch a.Result {
		case EffectError:
			ir.Errors++
			continue
		case EffectApplied:
			if a.OwnAnswerLost {
				ir.OwnAnswerLost++
			}
			continue
		}
		ir.Reruns++
		ownerWorker, _, _ := strings.Cut(a.Owner, "/")
		owner, logged := byRun[a.Owner]
		p := ev.Procs[ownerWorker]
		confirmed, tried := completed[a.Job][ownerWorker]
		cause := IdemUnexplained
		switch {
		case logged && owner.Result == EffectError:
			cause = IdemEffectUnknown
		case tried && confirmed:
			// The run that made the effect also recorded the completion:
			// this run should not have happened.
		case tried:
			cause = IdemCompleteFailed
		case p.Signal == "SIGKILL" || p.Hung || p.Crashed:
			cause = IdemKilled
		case p.Signal == "SIGTERM":
			cause = IdemStopped
		}
		ir.RerunsBy[cause]++
		if cause == IdemUnexplained {
			example("%s: %s found its side effect made by %s (logged: %v, completion tried %v confirmed %v, process %q)", a.Job, a.Run, a.Owner, logged, tried, confirmed, p.Signal)
		}
	}
	for _, e := range ev.Files.Exits {
		if s := e.Idempotency; s != nil {
			g := &ir.Guard
			g.Ran += s.Ran
			g.Completed += s.Completed
			g.DuplicatesCompleted += s.DuplicatesCompleted
			g.DuplicatesInProgress += s.DuplicatesInProgress
			g.TakenOver += s.TakenOver
			g.Released += s.Released
			g.Extensions += s.Extensions
			g.LocksLost += s.LocksLost
			g.Unavailable += s.Unavailable
			g.FailedOpen += s.FailedOpen
			g.CompleteFailed += s.CompleteFailed
			for k, v := range s.Requests {
				g.Requests[k] += v
			}
		}
	}
}

// idempotencyFailures lists the idempotency variant's broken guarantees.
func (r *Report) idempotencyFailures() []string {
	ir := r.Idempotency
	if ir == nil {
		return nil
	}
	var f []string
	add := func(n int, format string, args ...any) {
		if n > 0 {
			f = append(f, fmt.Sprintf(format, args...))
		}
	}
	add(ir.RerunsOfCompleted, "%d handler runs began after their job's completion was confirmed (re-runs of a completed job)", ir.RerunsOfCompleted)
	add(ir.OverwroteCompleted, "%d locks were taken over a COMPLETED record", ir.OverwroteCompleted)
	add(ir.DoneWithoutEffect, "%d jobs done without their side effect", ir.DoneWithoutEffect)
	add(ir.EffectNotDone, "%d jobs have their side effect made but are neither done nor pending", ir.EffectNotDone)
	add(ir.RerunsBy[IdemUnexplained], "%d unexplained re-runs after a side effect", ir.RerunsBy[IdemUnexplained])
	return f
}

// idempotencyText is the idempotency variant's part of the report text.
func (r *Report) idempotencyText() string {
	ir := r.Idempotency
	if ir == nil {
		return ""
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("idempotency: DynamoDB faults: %s", faultsText(r.Config.DynamoFaults))
	p("  side effects: %d made (each once, by its conditional write); %d jobs done without one, %d made but not done", ir.Effects, ir.DoneWithoutEffect, ir.EffectNotDone)
	var by []string
	for _, c := range idemCauses() {
		if n := ir.RerunsBy[c]; n > 0 {
			by = append(by, fmt.Sprintf("%s %d", c, n))
		}
	}
	p("  attempts: %d; re-runs after the effect was made: %d%s; own write found again (answer lost) %d; failed %d",
		ir.Attempts, ir.Reruns, func() string {
			if len(by) == 0 {
				return ""
			}
			return " (" + strings.Join(by, ", ") + ")"
		}(), ir.OwnAnswerLost, ir.Errors)
	p("  re-runs of a completed job: %d; locks taken over a COMPLETED record: %d", ir.RerunsOfCompleted, ir.OverwroteCompleted)
	p("  completions confirmed %d, failed %d; done jobs whose record is not COMPLETED at the end: %d", ir.Completions, ir.CompletionsFailed, ir.NotCompleted)
	g := ir.Guard
	p("  guard stats (processes that exited through Run): ran %d, completed %d, duplicates of completed %d, of in progress %d, taken over %d, released %d, lock extensions %d, locks lost %d, unavailable %d, complete failed %d, requests %d",
		g.Ran, g.Completed, g.DuplicatesCompleted, g.DuplicatesInProgress, g.TakenOver, g.Released, g.Extensions, g.LocksLost, g.Unavailable, g.CompleteFailed, g.TotalRequests())
	names := make([]string, 0, len(ir.Requests))
	for n := range ir.Requests {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := ir.Requests[n]
		var faults []string
		for _, k := range []faultproxy.Kind{faultproxy.Throttle, faultproxy.ServerError, faultproxy.Reset, faultproxy.DropResponse, faultproxy.Hang, faultproxy.UpstreamError, faultproxy.ClientGone} {
			if v := c.Faults[k]; v > 0 {
				faults = append(faults, fmt.Sprintf("%d %s", v, k))
			}
		}
		p("  DynamoDB %-12s %7d  faults: %s", n, c.Requests, strings.Join(faults, ", "))
	}
	for _, e := range ir.Examples {
		p("  %s", e)
	}
	return b.String()
}

// idempotencyVariant makes c the idempotency variant: the chaos variant's
// jobs, SQS faults and kills, with each worker's handler wrapped by an
// idempotency.Guard (keyed by the job's ID) on DynamoDB Local behind a
// fault proxy with the same faults (throttling, 5xx, resets, lost
// responses, hangs), and each job's side effect a conditional write. The
// Guard has its default options (LockMargin 5 s, CallTimeout 5 s); the
// side effect's call times out after 5 s too. 3,000 jobs, Concurrency 8
// per worker: DynamoDB Local, one JVM on a shared machine, takes every
// job's three conditional writes at a few hundred milliseconds each under
// load.
func idempotencyVariant(c *Config) {
	c.Jobs, c.Worker.Concurrency = 3000, 8
	c.DrainTimeout = 5 * time.Minute
	c.Faults = chaosFaults()
	c.DynamoFaults = chaosFaults()
	c.Kills = Kills{MinEvery: time.Second, MaxEvery: 4 * time.Second, KillShare: 0.5}
	c.Worker.Mode = ModeIdempotency
	c.Worker.Idem = &IdemConfig{LockMargin: 5 * time.Second, CallTimeout: 5 * time.Second}
}
