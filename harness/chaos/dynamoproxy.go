package chaos

import (
	"bufio"
	"os"
	"path/filepath"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
)

// dynamoProxy is the fault proxy in front of DynamoDB Local that the
// variants with a DynamoDB side (idempotency, unique) give their
// workers, with its request log when Config.ProxyLog is set.
type dynamoProxy struct {
	proxy *faultproxy.Proxy
	logf  *os.File
	log   *bufio.Writer
}

// startDynamoProxy starts the proxy with cfg's DynamoDB faults, seeded
// from cfg.Seed and salt (each variant its own sequence).
func startDynamoProxy(cfg Config, salt uint64) (*dynamoProxy, error) {
	d := &dynamoProxy{}
	popts := faultproxy.Options{Upstream: cfg.DynamoDB, Rules: cfg.DynamoFaults, Seed: cfg.Seed ^ salt}
	if cfg.ProxyLog {
		f, err := os.Create(filepath.Join(cfg.Dir, "dynamodb-proxy.jsonl"))
		if err != nil {
			return nil, err
		}
		d.logf, d.log = f, bufio.NewWriterSize(f, 1<<20)
		popts.Log = d.log
	}
	p, err := faultproxy.Start(popts)
	if err != nil {
		d.close()
		return nil, err
	}
	d.proxy = p
	return d, nil
}

// faultsOff stops the faults (the drain runs without them).
func (d *dynamoProxy) faultsOff() { d.proxy.SetRules(nil) }

// close stops the proxy and flushes its log.
func (d *dynamoProxy) close() error {
	var err error
	if d.proxy != nil {
		d.proxy.Close()
	}
	if d.log != nil {
		err = d.log.Flush()
		d.logf.Close()
		d.log = nil
	}
	return err
}
