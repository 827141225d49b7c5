package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// meter counts what one consumer's SQS client does on the wire: requests
// by API, and TCP connections opened.
type meter struct {
	dials atomic.Int64
	mu    sync.Mutex
	calls map[string]int64
}

func newMeter() *meter { return &meter{calls: map[string]int64{}} }

// client is the HTTP client every consumer gets: the SDK's default,
// counted, with the idle-connection pool docs/guides/scaling.md advises (enough idle
// connections per host for every call the consumer keeps in flight).
func (m *meter) client() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = 128
		t.MaxIdleConns = 256
		dial := t.DialContext
		if dial == nil {
			dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		}
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			m.dials.Add(1)
			return dial(ctx, network, addr)
		}
	})
}

// count wraps a BuildableClient's Do to count requests by API.
type countingDoer struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
	m *meter
}

func (c countingDoer) Do(r *http.Request) (*http.Response, error) {
	api := r.Header.Get("X-Amz-Target")
	if _, a, ok := strings.Cut(api, "."); ok {
		api = a
	}
	c.m.mu.Lock()
	c.m.calls[api]++
	c.m.mu.Unlock()
	return c.next.Do(r)
}

// snapshot returns the request counts so far.
func (m *meter) snapshot() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.calls))
	for k, v := range m.calls {
		out[k] = v
	}
	return out
}
