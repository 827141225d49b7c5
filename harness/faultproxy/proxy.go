// Package faultproxy is a fault-injecting reverse proxy for SQS's JSON
// protocol (and DynamoDB's, whose errors it answers in DynamoDB's own
// shape), for tests on this machine only: it listens on a loopback
// address, forwards to a loopback SQS (the emulator), and on each request,
// by action, may answer with SQS's throttling error, an HTTP 500, reset the
// connection before forwarding, forward and then drop the response (the
// call took effect and the client cannot know), never answer, or add
// latency (before forwarding, or after the upstream answered: a request
// the upstream answered after its client gave up is marked ClientGone, it
// took effect and its answer was lost). It reads the action from
// X-Amz-Target (the JSON protocol) or from Action= in a form body (the
// query protocol, which SNS's API uses). It counts what it did per action and can log every request as a
// JSON line with the receipt handles and message IDs it carried, the queue it
// addressed and the client that sent it (the SDK's AppID), or hand each
// request's Entry to a function (Options.OnRequest).
package faultproxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// Kind is one fault.
type Kind string

// The faults a Rule can inject.
const (
	None         Kind = ""
	Throttle     Kind = "throttle"      // HTTP 400, RequestThrottled, as SQS answers when rate-limited
	ServerError  Kind = "server-error"  // HTTP 500, InternalError
	Reset        Kind = "reset"         // the connection is reset before the request is forwarded
	DropResponse Kind = "drop-response" // forwarded (it takes effect), then the connection is reset
	Hang         Kind = "hang"          // never answers; the client's timeout ends the call
	// UpstreamError is not injected: it marks a forwarded request whose
	// answer the proxy could not read from upstream (the client gave up
	// first, say). The call may have taken effect; the client got no answer.
	UpstreamError Kind = "upstream-error"
	// ClientGone is not injected either: it marks a request the upstream
	// answered after the client had given up (its call timed out, its
	// connection closed): the call took effect and the client got no
	// answer. Rule.AnswerLatency provokes it.
	ClientGone Kind = "client-gone"
)

// kinds is the order in which a Rule's probabilities are tried.
var kinds = []Kind{Hang, Reset, Throttle, ServerError, DropResponse}

// reported lists the faults Summary shows, in order.
func reported() []Kind { return append(kinds[:len(kinds):len(kinds)], UpstreamError, ClientGone) }

// Rule says what happens to the requests of one action.
type Rule struct {
	// Probabilities, 0 to 1, that a request gets each fault. At most one
	// fault applies per request.
	Throttle, ServerError, Reset, DropResponse, Hang float64
	// Every, with EveryKind, gives every Every-th request of the action
	// that fault, deterministically (before the probabilities).
	Every     int
	EveryKind Kind
	// Latency is added to every request of the action before it is handled.
	Latency time.Duration
	// LatencyJitter, when positive, adds a further random latency between
	// 0 and LatencyJitter to every request of the action.
	LatencyJitter time.Duration
	// AnswerLatency is added to every forwarded request of the action
	// between the upstream's answer and passing it on: the call has taken
	// effect, and a client whose timeout ends meanwhile gets no answer
	// (its Entry then says ClientGone).
	AnswerLatency time.Duration
}

func (r Rule) chance(k Kind) float64 {
	switch k {
	case Throttle:
		return r.Throttle
	case ServerError:
		return r.ServerError
	case Reset:
		return r.Reset
	case DropResponse:
		return r.DropResponse
	case Hang:
		return r.Hang
	}
	return 0
}

// Options configures a Proxy.
type Options struct {
	// Upstream is the SQS endpoint to forward to, e.g.
	// "http://127.0.0.1:9324". It must be a loopback address.
	Upstream string
	// Listen is the address to listen on. Zero: "127.0.0.1:0". It must be
	// a loopback address.
	Listen string
	// Rules are the faults by action name ("DeleteMessageBatch"); the rule
	// under "*" applies to actions without their own.
	Rules map[string]Rule
	// Seed seeds the faults' randomness, for reproducible runs.
	Seed uint64
	// Log, when set, receives one JSON line per request (see Entry).
	Log io.Writer
	// OnRequest, when set, is called with every request's Entry once the
	// request is handled, on the request's goroutine (so concurrently): it
	// must be safe for concurrent use and quick, since the client waits.
	OnRequest func(Entry)
}

// Counts is what the proxy did with one action's requests.
type Counts struct {
	Requests  int          `json:"requests"`
	Forwarded int          `json:"forwarded"`
	Faults    map[Kind]int `json:"faults,omitempty"`
}

// Entry is one request's line in the log.
type Entry struct {
	Time       time.Time `json:"t"`
	Action     string    `json:"action"`
	Fault      Kind      `json:"fault,omitempty"`
	Status     int       `json:"status,omitempty"` // the upstream's status, when forwarded
	Millis     float64   `json:"ms"`
	Queue      string    `json:"queue,omitempty"`      // the queue's name, from the request's QueueUrl
	Client     string    `json:"client,omitempty"`     // the sender's SDK AppID (the "app/…" token of its User-Agent)
	Handles    []string  `json:"handles,omitempty"`    // receipt handles the request carried
	Bodies     []string  `json:"bodies,omitempty"`     // digests of the message bodies a send carried (BodyDigest)
	MessageIDs []string  `json:"messageIds,omitempty"` // message IDs in the response (receive, send)
	Received   []string  `json:"received,omitempty"`   // receipt handles in the response (receive)
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	// URL is where the proxy answers, for the SDK's BaseEndpoint.
	URL string

	upstream *url.URL
	client   *http.Client
	server   *http.Server
	ln       net.Listener
	closing  chan struct{}
	closeMu  sync.Once
	serving  sync.WaitGroup // requests being handled, hijacked ones included

	mu     sync.Mutex
	rules  map[string]Rule
	rng    *rand.Rand
	counts map[string]*Counts
	seen   map[string]int // requests per action, for Every

	logMu     sync.Mutex
	log       *json.Encoder
	onRequest func(Entry)
}

// Start starts a proxy.
func Start(o Options) (*Proxy, error) {
	up, err := url.Parse(o.Upstream)
	if err != nil || up.Host == "" {
		return nil, fmt.Errorf("faultproxy: Upstream %q is not a URL", o.Upstream)
	}
	if !loopback(up.Hostname()) {
		return nil, fmt.Errorf("faultproxy: Upstream %q is not a loopback address; the proxy only forwards on this machine", o.Upstream)
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil || !loopback(host) {
		return nil, fmt.Errorf("faultproxy: Listen %q must be a loopback host:port", o.Listen)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{
		URL:      "http://" + ln.Addr().String(),
		upstream: up,
		client: &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second,
		}},
		ln:      ln,
		closing: make(chan struct{}),
		rules:   map[string]Rule{},
		rng:     rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)),
		counts:  map[string]*Counts{},
		seen:    map[string]int{},
	}
	p.SetRules(o.Rules)
	if o.Log != nil {
		p.log = json.NewEncoder(o.Log)
	}
	p.onRequest = o.OnRequest
	p.server = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go p.server.Serve(ln)
	return p, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SetRules replaces the rules; nil clears them (no faults).
func (p *Proxy) SetRules(rules map[string]Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = map[string]Rule{}
	for k, v := range rules {
		p.rules[k] = v
	}
}

// Counts returns what the proxy did so far, by action.
func (p *Proxy) Counts() map[string]Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]Counts, len(p.counts))
	for k, c := range p.counts {
		cc := *c
		cc.Faults = map[Kind]int{}
		for kk, v := range c.Faults {
			cc.Faults[kk] = v
		}
		out[k] = cc
	}
	return out
}

// Summary formats Counts as one line per action, in name order.
func (p *Proxy) Summary() string {
	counts := p.Counts()
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		c := counts[n]
		fmt.Fprintf(&b, "%s: %d requests, %d forwarded", n, c.Requests, c.Forwarded)
		for _, k := range reported() {
			if v := c.Faults[k]; v > 0 {
				fmt.Fprintf(&b, ", %d %s", v, k)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Close stops the proxy; hanging requests end. It returns once every
// request has been handled, logged and passed to OnRequest.
func (p *Proxy) Close() error {
	p.closeMu.Do(func() { close(p.closing) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.server.Shutdown(ctx)
	p.serving.Wait() // Shutdown does not wait for hijacked (reset) connections
	p.client.CloseIdleConnections()
	return err
}

// decide picks the fault for one request of action, and its latencies
// before forwarding and after the answer.
func (p *Proxy) decide(action string) (Kind, time.Duration, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts[action]
	if c == nil {
		c = &Counts{Faults: map[Kind]int{}}
		p.counts[action] = c
	}
	c.Requests++
	r, ok := p.rules[action]
	if !ok {
		r = p.rules["*"]
	}
	p.seen[action]++
	kind := None
	if r.Every > 0 && r.EveryKind != None && p.seen[action]%r.Every == 0 {
		kind = r.EveryKind
	} else {
		for _, k := range kinds {
			if pr := r.chance(k); pr > 0 && p.rng.Float64() < pr {
				kind = k
				break
			}
		}
	}
	if kind != None {
		c.Faults[kind]++
	}
	if kind == None || kind == DropResponse {
		c.Forwarded++
	}
	latency := r.Latency
	if r.LatencyJitter > 0 {
		latency += time.Duration(p.rng.Int64N(int64(r.LatencyJitter)))
	}
	return kind, latency, r.AnswerLatency
}

// actionOf reads the SQS action from a JSON-protocol request
// (X-Amz-Target: AmazonSQS.DeleteMessageBatch) or a query-protocol one.
func actionOf(r *http.Request, body []byte) string {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		if _, a, ok := strings.Cut(t, "."); ok {
			return a
		}
		return t
	}
	if v, err := url.ParseQuery(string(body)); err == nil && v.Get("Action") != "" {
		return v.Get("Action")
	}
	return "unknown"
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.serving.Add(1)
	defer p.serving.Done()
	start := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	action := actionOf(r, body)
	kind, latency, answerLatency := p.decide(action)
	entry := Entry{Time: start, Action: action, Fault: kind, Client: appID(r.UserAgent())}
	entry.Queue, entry.Handles, entry.Bodies = requestIn(body)
	defer func() {
		entry.Millis = float64(time.Since(start).Microseconds()) / 1000
		p.write(entry)
	}()
	if latency > 0 && !wait(r.Context(), p.closing, latency) {
		return
	}
	switch kind {
	case Hang:
		select {
		case <-r.Context().Done():
		case <-p.closing:
		}
		reset(w)
		return
	case Reset:
		reset(w)
		return
	case Throttle:
		if dynamoDB(r) {
			writeDynamoDBError(w, http.StatusBadRequest, "ProvisionedThroughputExceededException", "The level of configured provisioned throughput for the table was exceeded.")
			return
		}
		writeError(w, http.StatusBadRequest, "com.amazonaws.sqs#RequestThrottled", "RequestThrottled;Sender", "Rate exceeded")
		return
	case ServerError:
		if dynamoDB(r) {
			writeDynamoDBError(w, http.StatusInternalServerError, "InternalServerError", "Internal server error")
			return
		}
		writeError(w, http.StatusInternalServerError, "com.amazonaws.sqs#InternalError", "InternalError;Receiver", "We encountered an internal error. Please try again.")
		return
	}
	resp, respBody, err := p.forward(r, body)
	if err != nil {
		entry.Fault = UpstreamError
		p.mu.Lock()
		p.counts[action].Faults[UpstreamError]++
		p.mu.Unlock()
		reset(w)
		return
	}
	entry.Status = resp.StatusCode
	entry.MessageIDs, entry.Received = idsIn(respBody)
	if kind == DropResponse {
		reset(w)
		return
	}
	if answerLatency > 0 {
		wait(r.Context(), p.closing, answerLatency)
	}
	if r.Context().Err() != nil {
		// The client gave up while the upstream worked (or while the answer
		// waited): it will never see this answer.
		entry.Fault = ClientGone
		p.mu.Lock()
		p.counts[action].Faults[ClientGone]++
		p.mu.Unlock()
		return
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(respBody)
}

// forward sends the request upstream and reads the whole response.
func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, []byte, error) {
	u := *p.upstream
	u.Path, u.RawQuery = r.URL.Path, r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = r.Header.Clone()
	req.Host = p.upstream.Host
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// writeError answers as SQS's JSON protocol does for a query-compatible
// error: the __type in the body and the query code in x-amzn-query-error.
func writeError(w http.ResponseWriter, status int, typ, queryError, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Query-Error", queryError)
	w.Header().Set("X-Amzn-Requestid", "faultproxy")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"__type":%q,"message":%q}`, typ, msg)
}

// dynamoDB reports whether a request is DynamoDB's (X-Amz-Target:
// DynamoDB_20120810.PutItem): the proxy then answers its throttling and
// server errors as DynamoDB does.
func dynamoDB(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_")
}

// writeDynamoDBError answers as DynamoDB's JSON protocol does: the error's
// type, qualified by the API version, in __type.
func writeDynamoDBError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Requestid", "faultproxy")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":%q}`, typ, msg)
}

// reset closes the client's connection abruptly (RST), without an answer.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.SetLinger(0)
	}
	conn.Close()
}

// wait sleeps d unless the request or the proxy ends first.
func wait(ctx context.Context, closing <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-closing:
		return false
	}
}

func (p *Proxy) write(e Entry) {
	if p.onRequest != nil {
		p.onRequest(e)
	}
	if p.log == nil {
		return
	}
	p.logMu.Lock()
	defer p.logMu.Unlock()
	p.log.Encode(e)
}

// appID returns the SDK's AppID from a User-Agent ("… app/chaos-w3 …").
func appID(userAgent string) string {
	for _, f := range strings.Fields(userAgent) {
		if id, ok := strings.CutPrefix(f, "app/"); ok {
			return id
		}
	}
	return ""
}

// BodyDigest is how an Entry names a message body a send carried: the
// first 16 hex digits of its SHA-256.
func BodyDigest(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:8])
}

// requestIn returns the queue name, the receipt handles and the digests of
// the message bodies a request body carries.
func requestIn(body []byte) (queue string, handles, bodies []string) {
	var req struct {
		QueueUrl      string
		ReceiptHandle string
		MessageBody   *string
		Entries       []struct {
			ReceiptHandle string
			MessageBody   *string
		}
	}
	if json.Unmarshal(body, &req) != nil {
		return "", nil, nil
	}
	if req.MessageBody != nil {
		bodies = append(bodies, BodyDigest(*req.MessageBody))
	}
	for _, e := range req.Entries {
		if e.MessageBody != nil {
			bodies = append(bodies, BodyDigest(*e.MessageBody))
		}
	}
	if i := strings.LastIndexByte(req.QueueUrl, '/'); i >= 0 {
		queue = req.QueueUrl[i+1:]
	}
	var out []string
	if req.ReceiptHandle != "" {
		out = append(out, req.ReceiptHandle)
	}
	for _, e := range req.Entries {
		if e.ReceiptHandle != "" {
			out = append(out, e.ReceiptHandle)
		}
	}
	return queue, out, bodies
}

// idsIn returns the message IDs and receipt handles a response body
// carries (ReceiveMessage, SendMessage, SendMessageBatch).
func idsIn(body []byte) (ids, handles []string) {
	var resp struct {
		MessageId  string
		Messages   []struct{ MessageId, ReceiptHandle string }
		Successful []struct{ MessageId string }
	}
	if json.Unmarshal(body, &resp) != nil {
		return nil, nil
	}
	if resp.MessageId != "" {
		ids = append(ids, resp.MessageId)
	}
	for _, m := range resp.Messages {
		ids = append(ids, m.MessageId)
		handles = append(handles, m.ReceiptHandle)
	}
	for _, s := range resp.Successful {
		if s.MessageId != "" {
			ids = append(ids, s.MessageId)
		}
	}
	return ids, handles
}
