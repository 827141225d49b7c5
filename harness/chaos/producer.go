package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/harness/sqsdrain"
	"github.com/sqsworker/sqsworker/producer"
)

// ProducerSettings is the producer variant's part of a Config. The jobs
// (Config.Jobs, drawn from Config.Mix and Config.Seed) are split evenly
// between Producers processes (the chaos worker program with -produce),
// each sending its share through the fault proxy with the public producer
// package: in chunks of 25 jobs, a chunk with SendBatch (share BatchShare)
// or one Enqueue per job (the background batcher, which holds messages
// before it sends them), at Rate jobs per second. Config.Kills stops
// producers while they send: SIGKILL (share KillShare: whatever the
// batcher holds is never reported) or SIGTERM (the producer stops taking
// jobs and Close flushes what it holds), at most MaxKills, never the last
// running one. The chaos phase ends when every producer has exited, or
// after Config.Duration (the rest then get SIGTERM).
type ProducerSettings struct {
	Producers  int     `json:"producers"`
	Rate       int     `json:"rate"` // jobs per second per producer
	BatchShare float64 `json:"batchShare"`
	MaxKills   int     `json:"maxKills"`
	// MaxAttempts and CallTimeout are the producers' Options.
	MaxAttempts int           `json:"maxAttempts"`
	CallTimeout time.Duration `json:"callTimeout"`
	// CloseTimeout bounds a producer's Close after SIGTERM or its last job.
	CloseTimeout time.Duration `json:"closeTimeout"`
}

// producerVariant makes c the producer variant.
func producerVariant(c *Config) {
	c.Jobs = 40_000
	c.Mix = Mix{}
	c.Faults = chaosFaults()
	c.Kills = Kills{MinEvery: 3 * time.Second, MaxEvery: 6 * time.Second, KillShare: 0.75}
	c.Duration = 5 * time.Minute
	c.Producer = &ProducerSettings{
		Producers: 8, Rate: 200, BatchShare: 0.3, MaxKills: 6,
		MaxAttempts: 2, CallTimeout: 2 * time.Second, CloseTimeout: 5 * time.Second,
	}
	c.Workers = c.Producer.Producers
}

// ProducerConfig is what a producer process is told (as JSON, in a file
// the orchestrator writes): process wN sends the N-th share of the jobs.
type ProducerConfig struct {
	Endpoint string           `json:"endpoint"` // the fault proxy's URL
	Region   string           `json:"region"`
	Queue    string           `json:"queue"` // the queue's URL
	Dir      string           `json:"dir"`
	Jobs     int              `json:"jobs"`
	Mix      Mix              `json:"mix"`
	Seed     uint64           `json:"seed"`
	Settings ProducerSettings `json:"settings"`
}

// The files a producer process writes, named after it.
const (
	sendsFile        = ".sends.jsonl"        // a SendRecord per job given to the producer and per result
	producerExitFile = ".producer-exit.json" // a ProducerExit once Close returned
)

// SendRecord is one event of one job in a producer process: given to the
// producer (Ev "given", written before the call), or its Result ("sent"
// with the message ID SQS gave it, or "failed" with the error).
type SendRecord struct {
	Job      string    `json:"job"`
	Ev       string    `json:"ev"`
	Message  string    `json:"msg,omitempty"`
	Attempts int       `json:"att,omitempty"`
	Err      string    `json:"err,omitempty"`
	Worker   string    `json:"w"`
	Time     time.Time `json:"t"`
}

// ProducerExit is what a producer process writes once Close returned.
type ProducerExit struct {
	Worker   string         `json:"w"`
	Signal   time.Time      `json:"signal,omitzero"` // when it got SIGTERM
	Returned time.Time      `json:"returned"`
	CloseErr string         `json:"closeErr,omitempty"`
	Stats    producer.Stats `json:"stats"`
}

// shareOf returns the jobs process name (w1, w2, …) sends.
func shareOf(jobs []Job, producers int, name string) ([]Job, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "w"))
	if err != nil || n < 1 || n > producers {
		return nil, fmt.Errorf("chaos: producer %q: the name must be w1 to w%d", name, producers)
	}
	i := n - 1
	return jobs[i*len(jobs)/producers : (i+1)*len(jobs)/producers], nil
}

// RunProducer is a producer process: it sends its share of the jobs
// through cfg.Endpoint with a producer.Producer, recording each job before
// it is handed over and each Result when it comes, until its share is
// sent or ctx ends (SIGTERM); then it closes the producer (flushing what
// the batcher holds, within CloseTimeout) and writes its ProducerExit.
func RunProducer(ctx context.Context, cfg ProducerConfig, name string, stoppedAt func() time.Time) error {
	s := cfg.Settings
	mine, err := shareOf(MakeJobs(cfg.Jobs, cfg.Mix, 0, cfg.Seed), s.Producers, name)
	if err != nil {
		return err
	}
	base := filepath.Join(cfg.Dir, name)
	rec, err := openAppender(base + sendsFile)
	if err != nil {
		return err
	}
	defer rec.close()
	client := sqs.New(sqs.Options{
		BaseEndpoint: &cfg.Endpoint, Region: cfg.Region, AppID: name,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConnsPerHost = 16
		}),
	})
	p, err := producer.New(client, cfg.Queue, func(o *producer.Options) {
		o.MaxAttempts, o.CallTimeout = s.MaxAttempts, s.CallTimeout
	})
	if err != nil {
		return err
	}
	record := func(r SendRecord) {
		r.Worker, r.Time = name, time.Now()
		if err := rec.write(r); err != nil {
			fmt.Fprintln(os.Stderr, "chaos: writing a send record:", err)
		}
	}
	result := func(job string, res producer.Result) {
		r := SendRecord{Job: job, Ev: "sent", Message: res.MessageID, Attempts: res.Attempts}
		if res.Err != nil {
			r.Ev, r.Message, r.Err = "failed", "", res.Err.Error()
		}
		record(r)
	}
	const chunk = 25
	idx, _ := strconv.Atoi(strings.TrimPrefix(name, "w")) // shareOf checked it
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x70726f64+uint64(idx)))
	every := time.Second / time.Duration(max(s.Rate, 1))
	next := time.Now()
	// batches are the SendBatch calls, which end before Close (as an
	// application finishes its calls before closing); waiting are the
	// Enqueued messages' Results, which Close makes final.
	var batches, waiting sync.WaitGroup
send:
	for start := 0; start < len(mine); start += chunk {
		part := mine[start:min(start+chunk, len(mine))]
		next = next.Add(time.Duration(len(part)) * every)
		select {
		case <-ctx.Done():
			break send
		case <-time.After(time.Until(next)):
		}
		msgs := make([]producer.Message, len(part))
		for i, j := range part {
			msgs[i] = producer.Message{Body: j.Body()}
			record(SendRecord{Job: j.ID, Ev: "given"})
		}
		if rng.Float64() < s.BatchShare {
			batches.Add(1)
			go func() {
				defer batches.Done()
				res, _ := p.SendBatch(context.Background(), msgs)
				for i, r := range res {
					result(part[i].ID, r)
				}
			}()
			continue
		}
		for i, m := range msgs {
			pd, err := p.Enqueue(context.Background(), m)
			if err != nil {
				result(part[i].ID, producer.Result{Err: err})
				continue
			}
			waiting.Add(1)
			go func() {
				defer waiting.Done()
				<-pd.Done()
				r, _ := pd.Wait(context.Background())
				result(part[i].ID, r)
			}()
		}
	}
	batches.Wait()
	closeCtx, cancel := context.WithTimeout(context.Background(), s.CloseTimeout)
	defer cancel()
	closeErr := p.Close(closeCtx)
	waiting.Wait()
	exit := ProducerExit{Worker: name, Signal: stoppedAt(), Returned: time.Now(), Stats: p.Stats()}
	if closeErr != nil {
		exit.CloseErr = closeErr.Error()
	}
	data, err := json.Marshal(exit)
	if err != nil {
		return err
	}
	return os.WriteFile(base+producerExitFile, data, 0o644)
}

// LoadProducerConfig reads a ProducerConfig file.
func LoadProducerConfig(path string) (ProducerConfig, error) { return loadJSON[ProducerConfig](path) }

// runProducer is Run for the producer variant: cfg.Dir and
// cfg.WorkerBinary are set.
func runProducer(ctx context.Context, cfg Config, logf func(string, ...any)) (*Report, error) {
	s := *cfg.Producer
	if cfg.Workers > 0 { // make chaos WORKERS=…
		s.Producers = cfg.Workers
	}
	cfg.Producer = &s
	if s.Producers <= 0 || s.Rate <= 0 || s.MaxAttempts <= 0 || s.CallTimeout <= 0 || s.CloseTimeout <= 0 {
		return nil, errors.New("chaos: ProducerSettings needs Producers, Rate, MaxAttempts, CallTimeout and CloseTimeout; start from Variant(\"producer\")")
	}
	direct := directClient(cfg.SQS, cfg.Region)
	q, err := direct.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(fmt.Sprintf("chaos-%s-%d-%d", cfg.Variant, cfg.Seed, time.Now().UnixNano()%1e9)),
		Attributes: map[string]string{string(types.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(cfg.Visibility / time.Second))},
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: creating the queue: %w", err)
	}
	url := aws.ToString(q.QueueUrl)
	jobs := MakeJobs(cfg.Jobs, cfg.Mix, 0, cfg.Seed)

	obs := newObserver(0, 0)
	proxy, stopProxy, err := startProxy(cfg, obs)
	if err != nil {
		return nil, err
	}
	defer stopProxy()
	pc := ProducerConfig{Endpoint: proxy.URL, Region: cfg.Region, Queue: url, Dir: cfg.Dir, Jobs: cfg.Jobs, Mix: cfg.Mix, Seed: cfg.Seed, Settings: s}
	pcPath := filepath.Join(cfg.Dir, "producer.json")
	if err := writeJSON(pcPath, pc); err != nil {
		return nil, err
	}
	fl := &fleet{bin: cfg.WorkerBinary, config: pcPath, dir: cfg.Dir, args: []string{"-produce"},
		exitBound: s.CloseTimeout + s.CallTimeout*time.Duration(s.MaxAttempts) + ExitSlack}
	defer fl.killAll()
	var timing Timing
	timing.Start = time.Now()
	for range s.Producers {
		if _, err := fl.start(); err != nil {
			return nil, err
		}
	}
	logf("%d producers sending %d jobs to %s through the proxy", s.Producers, len(jobs), url)

	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b696c6c))
	var nextKill <-chan time.Time
	if cfg.Kills.MaxEvery > 0 && s.MaxKills > 0 {
		nextKill = time.After(cfg.Kills.interval(rng))
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	end := time.After(cfg.Duration)
	kills := 0
wait:
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-end:
			logf("producers still sending after %v: SIGTERM", cfg.Duration)
			break wait
		case <-nextKill:
			if live := fl.running(); len(live) > 1 {
				p := live[rng.IntN(len(live))]
				if rng.Float64() < cfg.Kills.KillShare {
					fl.kill(p)
				} else {
					fl.terminate(p)
				}
				kills++
			}
			nextKill = nil
			if kills < s.MaxKills {
				nextKill = time.After(cfg.Kills.interval(rng))
			}
		case <-tick.C:
			if len(fl.running()) == 0 {
				break wait
			}
		}
	}
	fl.stopAll()
	timing.Chaos = time.Since(timing.Start)
	procs, names, exitMax := fl.info()
	fl.mu.Lock()
	for _, p := range fl.procs {
		if p.signal == "" && p.waitErr != nil {
			pi := procs[p.name]
			pi.Crashed = true
			procs[p.name] = pi
		}
	}
	fl.mu.Unlock()
	if err := stopProxy(); err != nil {
		return nil, err
	}
	logf("producers done after %v; reading the queue", timing.Chaos.Round(time.Millisecond))

	drainStart := time.Now()
	msgs, err := sqsdrain.Drain(ctx, direct, url, 4*sqsdrain.Visibility)
	var notEmpty *sqsdrain.NotEmptyError
	unread := 0
	if errors.As(err, &notEmpty) {
		unread, err = notEmpty.Left, nil
	}
	if err != nil {
		return nil, fmt.Errorf("chaos: reading the queue: %w", err)
	}
	timing.Drain, timing.Drained = time.Since(drainStart), unread == 0
	timing.Work = time.Since(timing.Start)
	ev := producerEvidence{Config: cfg, Jobs: jobs, Names: names, Procs: procs, Exits: map[string]ProducerExit{},
		LostSends: obs.lostSends, Reached: obs.reached, Counts: proxy.Counts(), Timing: timing, ExitMax: exitMax, Unread: unread}
	for _, m := range msgs {
		c := receivedCopy{Job: "?", Message: aws.ToString(m.MessageId)}
		if j, err := ParseJob(aws.ToString(m.Body)); err == nil {
			c.Job = j.ID
		}
		ev.Received = append(ev.Received, c)
	}
	for _, n := range names {
		recs, err := readLines[SendRecord](filepath.Join(cfg.Dir, n+sendsFile))
		if err != nil {
			return nil, err
		}
		ev.Sends = append(ev.Sends, recs...)
		if data, err := os.ReadFile(filepath.Join(cfg.Dir, n+producerExitFile)); err == nil {
			var e ProducerExit
			if err := json.Unmarshal(data, &e); err != nil {
				return nil, fmt.Errorf("%s%s: %w", n, producerExitFile, err)
			}
			ev.Exits[n] = e
		}
	}
	if err := writeJSON(filepath.Join(cfg.Dir, producerEvidenceFile), ev); err != nil {
		return nil, err
	}
	report := reconcileProducer(ev)
	if err := writeJSON(filepath.Join(cfg.Dir, "report.json"), report); err != nil {
		return report, err
	}
	return report, os.WriteFile(filepath.Join(cfg.Dir, "report.txt"), []byte(report.Text()), 0o644)
}

// producerEvidenceFile is where runProducer saves its evidence (Rereport
// reconciles it again).
const producerEvidenceFile = "producer-evidence.json"

// rereportProducer reconciles a producer run's saved evidence again.
func rereportProducer(data []byte) (*Report, error) {
	var ev producerEvidence
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("%s: %w", producerEvidenceFile, err)
	}
	return reconcileProducer(ev), nil
}

// receivedCopy is one message read from the queue at the end of a
// producer run.
type receivedCopy struct {
	Job     string // "?" when the body is not a job
	Message string // its message ID
}

// producerEvidence is what a producer run collected, for reconcileProducer.
type producerEvidence struct {
	Config   Config
	Jobs     []Job
	Names    []string
	Procs    map[string]procInfo
	Sends    []SendRecord
	Exits    map[string]ProducerExit
	Received []receivedCopy
	// LostSends counts, by faultproxy.BodyDigest, the sends of a body that
	// reached SQS (or may have) whose answer the proxy saw lost (dropped,
	// or the client gone); Reached the sends that reached SQS (or may
	// have), answered or not: a client's timeout can also end a call whose
	// answer is on its way, which the proxy cannot see.
	LostSends map[string]int
	Reached   map[string]int
	Counts    map[string]faultproxy.Counts
	Timing    Timing
	ExitMax   time.Duration
	Unread    int
}

// ProducerFigures is what a producer run found, job by job: what each
// producer reported, against what the queue held at the end.
type ProducerFigures struct {
	Processes int `json:"processes"`
	// NotGiven counts jobs never handed to a producer (their process was
	// stopped first); Given the others.
	NotGiven int `json:"notGiven"`
	Given    int `json:"given"`
	// ReportedSent and ReportedFailed count the jobs whose Result the
	// producer reported; Unreported those given to a producer that was
	// SIGKILLed before it reported them.
	ReportedSent   int `json:"reportedSent"`
	ReportedFailed int `json:"reportedFailed"`
	Unreported     int `json:"unreported"`
	// UnreportedNoKill counts jobs given to a producer that was not
	// SIGKILLed and never reported them: Close must report every message.
	UnreportedNoKill int `json:"unreportedNoKill"`

	// Copies is the messages read from the queue; Unknown those that are
	// no job of this run.
	Copies  int `json:"copies"`
	Unknown int `json:"unknown"`
	// SentMissing counts jobs reported sent that are not in the queue
	// (silently dropped); SentWrongID those in it, but none with the
	// message ID the producer reported.
	SentMissing int `json:"sentMissing"`
	SentWrongID int `json:"sentWrongId"`
	// FailedAbsent and FailedPresent split the jobs reported failed;
	// FailedPresentUnexplained counts those in the queue with more copies
	// than sends that reached SQS (every one of them had its answer lost).
	FailedAbsent             int `json:"failedAbsent"`
	FailedPresent            int `json:"failedPresent"`
	FailedPresentUnexplained int `json:"failedPresentUnexplained"`
	// UnreportedPresent and UnreportedAbsent split the unreported jobs.
	UnreportedPresent int `json:"unreportedPresent"`
	UnreportedAbsent  int `json:"unreportedAbsent"`
	// NotGivenPresent counts jobs never given to a producer that are in
	// the queue anyway.
	NotGivenPresent int `json:"notGivenPresent"`
	// Duplicates counts copies beyond a job's first: by a lost answer (a
	// send carrying it reached SQS, its answer never reached the producer,
	// which sent it again), or unexplained (more copies than sends that
	// reached SQS).
	Duplicates            int `json:"duplicates"`
	DuplicatesLostAnswer  int `json:"duplicatesLostAnswer"`
	DuplicatesUnexplained int `json:"duplicatesUnexplained"`
	// LostAnswers is the send entries the proxy forwarded whose answer it
	// saw lost (dropped, or the client gone before it). A call can also
	// time out in the producer with SQS's answer on its way, which the
	// proxy does not see: so LostAnswers may be lower than the duplicates.
	LostAnswers int `json:"lostAnswers"`
	// Stats sums producer.Stats over the processes that closed their
	// producer (SIGKILLed ones leave none).
	Stats    producer.Stats `json:"stats"`
	Examples []string       `json:"examples,omitempty"`
}

// reconcileProducer checks every job's copies in the queue against what
// its producer reported.
func reconcileProducer(ev producerEvidence) *Report {
	cfg := ev.Config
	pf := &ProducerFigures{Processes: len(ev.Names), Copies: len(ev.Received)}
	r := &Report{Variant: cfg.Variant, Seed: cfg.Seed, Jobs: len(ev.Jobs), Workers: cfg.Producer.Producers, Config: cfg,
		ByKind: map[Kind]*KindCounts{}, DuplicatesBy: map[Cause]int{}, DLQDuplicatesBy: map[Cause]int{},
		Timing: ev.Timing, Requests: ev.Counts, Unread: ev.Unread, Producer: pf}
	example := func(format string, args ...any) {
		if len(pf.Examples) < 20 {
			pf.Examples = append(pf.Examples, fmt.Sprintf(format, args...))
		}
	}
	type fate struct {
		given, sent, failed bool
		worker, msg         string
	}
	fates := map[string]*fate{}
	for _, s := range ev.Sends {
		f := fates[s.Job]
		if f == nil {
			f = &fate{}
			fates[s.Job] = f
		}
		f.worker = s.Worker
		switch s.Ev {
		case "given":
			f.given = true
		case "sent":
			f.sent, f.msg = true, s.Message
		case "failed":
			f.failed = true
		}
	}
	copies := map[string][]string{}
	byID := map[string]bool{}
	for _, j := range ev.Jobs {
		byID[j.ID] = true
	}
	for _, c := range ev.Received {
		if !byID[c.Job] {
			pf.Unknown++
			continue
		}
		copies[c.Job] = append(copies[c.Job], c.Message)
	}
	for _, n := range ev.LostSends {
		pf.LostAnswers += n
	}
	for _, j := range ev.Jobs {
		f := fates[j.ID]
		if f == nil {
			f = &fate{}
		}
		got := copies[j.ID]
		// Each copy in the queue needs a send of the job that reached SQS
		// (answered 200, whether the producer read the answer or not).
		reached := ev.Reached[faultproxy.BodyDigest(j.Body())]
		switch {
		case !f.given:
			pf.NotGiven++
			if len(got) > 0 {
				pf.NotGivenPresent++
				example("%s: never given to a producer, yet %d copies in the queue", j.ID, len(got))
			}
			continue
		case f.sent:
			pf.ReportedSent++
			if len(got) == 0 {
				pf.SentMissing++
				r.Lost++
				if len(r.LostJobs) < 20 {
					r.LostJobs = append(r.LostJobs, j.ID)
				}
			} else if !contains(got, f.msg) {
				pf.SentWrongID++
				example("%s: reported sent as %s, but the queue holds %v", j.ID, f.msg, got)
			}
		case f.failed:
			pf.ReportedFailed++
			if len(got) == 0 {
				pf.FailedAbsent++
			} else {
				pf.FailedPresent++
				if len(got) > reached {
					pf.FailedPresentUnexplained++
					example("%s: reported failed, yet %d copies in the queue and %d sends that reached SQS", j.ID, len(got), reached)
				}
			}
		default:
			pf.Unreported++
			if p := ev.Procs[f.worker]; p.Signal != "SIGKILL" && !p.Hung {
				pf.UnreportedNoKill++
				example("%s: given to %s, which was not SIGKILLed, and never reported", j.ID, f.worker)
			}
			if len(got) > 0 {
				pf.UnreportedPresent++
			} else {
				pf.UnreportedAbsent++
			}
		}
		pf.Given++
		// A copy beyond the first comes of a send that reached SQS while
		// its answer did not reach the producer, which sent it again.
		if extra := len(got) - 1; extra > 0 {
			explained := min(extra, max(reached-1, 0))
			pf.Duplicates += extra
			pf.DuplicatesLostAnswer += explained
			if extra > explained {
				pf.DuplicatesUnexplained += extra - explained
				example("%s: %d copies in the queue, %d sends that reached SQS", j.ID, len(got), reached)
			}
		}
	}
	for _, e := range ev.Exits {
		s := &pf.Stats
		s.Requests += e.Stats.Requests
		s.Sent += e.Stats.Sent
		s.Failed += e.Stats.Failed
		s.Retried += e.Stats.Retried
	}
	r.processes(evidence{Config: cfg, Procs: ev.Procs, Counts: ev.Counts, Timing: ev.Timing, ExitMax: ev.ExitMax})
	r.Failures = pf.failures(r)
	return r
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// failures lists the producer run's broken criteria.
func (pf *ProducerFigures) failures(r *Report) []string {
	var f []string
	add := func(n int, format string, args ...any) {
		if n > 0 {
			f = append(f, fmt.Sprintf(format, args...))
		}
	}
	add(r.Unread, "the final read could not see %d messages of the queue", r.Unread)
	add(pf.SentMissing, "%d jobs reported sent are not in the queue (silently dropped): %v", pf.SentMissing, r.LostJobs)
	add(pf.SentWrongID, "%d jobs reported sent have no copy with the message ID the producer reported", pf.SentWrongID)
	add(pf.FailedPresentUnexplained, "%d jobs reported failed are in the queue with more copies than sends that reached SQS", pf.FailedPresentUnexplained)
	add(pf.DuplicatesUnexplained, "%d duplicate copies beyond the sends that reached SQS", pf.DuplicatesUnexplained)
	add(pf.NotGivenPresent, "%d jobs never given to a producer are in the queue", pf.NotGivenPresent)
	add(pf.UnreportedNoKill, "%d jobs given to producers that were not SIGKILLed got no Result", pf.UnreportedNoKill)
	add(pf.Unknown, "%d messages in the queue are no job of this run", pf.Unknown)
	add(r.Processes.Hung, "%d producers hung after SIGTERM: %v", r.Processes.Hung, r.Processes.HungNames)
	add(r.Processes.Crashed, "%d producers exited with an error without being signalled: %v", r.Processes.Crashed, r.Processes.CrashedNames)
	add(r.Processes.Races, "%d data races reported by producer processes (see %v)", r.Processes.Races, r.Processes.RaceNames)
	return f
}

// producerText is Text for a producer run.
func (r *Report) producerText() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	c, pf, s := r.Config, r.Producer, r.Config.Producer
	p("chaos report: variant %s, seed %d, %d jobs, %d producer processes (%d jobs/s each, %.0f%% of chunks by SendBatch, the rest by Enqueue)",
		r.Variant, r.Seed, r.Jobs, s.Producers, s.Rate, 100*s.BatchShare)
	p("  faults: %s", faultsText(c.Faults))
	p("  kills: at most %d, every %v-%v, %.0f%% SIGKILL, the rest SIGTERM; producer MaxAttempts %d, CallTimeout %v, CloseTimeout %v",
		s.MaxKills, c.Kills.MinEvery, c.Kills.MaxEvery, 100*c.Kills.KillShare, s.MaxAttempts, s.CallTimeout, s.CloseTimeout)
	p("  time: sending %v, reading the queue %v", r.Timing.Chaos.Round(time.Millisecond), r.Timing.Drain.Round(time.Millisecond))
	p("")
	p("jobs: %d = given %d + never given %d (their producer stopped first)", r.Jobs, pf.Given, pf.NotGiven)
	p("  reported sent %d: in the queue %d, missing %d (silent drops), without the reported message ID %d",
		pf.ReportedSent, pf.ReportedSent-pf.SentMissing, pf.SentMissing, pf.SentWrongID)
	p("  reported failed %d: absent %d, present %d (from a lost answer: %d, unexplained: %d)",
		pf.ReportedFailed, pf.FailedAbsent, pf.FailedPresent, pf.FailedPresent-pf.FailedPresentUnexplained, pf.FailedPresentUnexplained)
	p("  unreported (producer SIGKILLed first) %d: present %d, absent %d; unreported without a SIGKILL %d",
		pf.Unreported, pf.UnreportedPresent, pf.UnreportedAbsent, pf.UnreportedNoKill)
	p("  never given but present %d; messages that are no job %d", pf.NotGivenPresent, pf.Unknown)
	p("queue: %d messages; duplicates %d (a send reached SQS, its answer lost: %d; unexplained: %d); send entries whose answer the proxy saw lost %d",
		pf.Copies, pf.Duplicates, pf.DuplicatesLostAnswer, pf.DuplicatesUnexplained, pf.LostAnswers)
	for _, e := range pf.Examples {
		p("  %s", e)
	}
	pr := r.Processes
	p("processes: %d started, %d SIGTERM, %d SIGKILL, %d hung, %d crashed; SIGTERMed producers exited within %v",
		pr.Started, pr.Terminated, pr.Killed, pr.Hung, pr.Crashed, pr.ExitMax.Round(time.Millisecond))
	st := pf.Stats
	p("producer stats (processes that closed): requests %d, sent %d, failed %d, entries retried %d", st.Requests, st.Sent, st.Failed, st.Retried)
	p("requests through the proxy: %d (%.3f per job)", r.TotalRequests, r.RequestsPerJob)
	names := make([]string, 0, len(r.Requests))
	for n := range r.Requests {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rc := r.Requests[n]
		var faults []string
		for _, k := range []faultproxy.Kind{faultproxy.Throttle, faultproxy.ServerError, faultproxy.Reset, faultproxy.DropResponse, faultproxy.Hang, faultproxy.UpstreamError} {
			if v := rc.Faults[k]; v > 0 {
				faults = append(faults, fmt.Sprintf("%d %s", v, k))
			}
		}
		p("  %-28s %7d  faults: %s", n, rc.Requests, strings.Join(faults, ", "))
	}
	p("")
	if r.Passed() {
		p("PASS")
	} else {
		p("FAIL:")
		for _, f := range r.Failures {
			p("  - %s", f)
		}
	}
	return b.String()
}
