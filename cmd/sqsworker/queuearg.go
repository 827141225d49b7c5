package main

import (
	"context"
	"fmt"

	"github.com/sqsworker/sqsworker/queueref"
)

// Queue arguments. Every QUEUE the commands take is a name, a URL or an
// ARN, as package queueref reads them:
//
//   - a malformed one is a usage error (exit 2) that shows the valid forms,
//     before any call;
//   - a name is looked up in the region and account of --region/--profile;
//   - an ARN names its own region: the SDK sends every call to its client's
//     region, so the commands make the client for that queue in the ARN's
//     region (and say nothing when it is the configured one);
//   - a URL is used as it is, with the configured region's client.

// checkQueues reports the first malformed queue argument as a usage error.
func (a *app) checkQueues(cmd *command, queues ...string) bool {
	for _, q := range queues {
		if err := queueref.Check(q); err != nil {
			fmt.Fprintf(a.stderr, "sqsworker %s: %v\n", cmd.path, err)
			return false
		}
	}
	return true
}

// queueConn returns the connection flags for work on queue: those given,
// with the region of queue's ARN when it is one.
func queueConn(conn *awsFlags, queue string) *awsFlags {
	f := *conn
	if arn, err := queueref.ParseARN(queue); err == nil {
		f.region = arn.Region
	}
	return &f
}

// regionClients makes one SQS and one SNS client per region, for commands
// that take several queues.
type regionClients struct {
	a    *app
	cmd  *command
	conn *awsFlags
	sqs  map[string]client
	sns  map[string]snsClient
}

func (a *app) regionClients(cmd *command, conn *awsFlags) *regionClients {
	return &regionClients{a: a, cmd: cmd, conn: conn, sqs: map[string]client{}, sns: map[string]snsClient{}}
}

// sqsFor returns the SQS client for queue, reporting a failure.
func (r *regionClients) sqsFor(ctx context.Context, queue string) (client, bool) {
	f := queueConn(r.conn, queue)
	if c, ok := r.sqs[f.region]; ok {
		return c, true
	}
	c, ok := r.a.connect(ctx, r.cmd, f)
	if ok {
		r.sqs[f.region] = c
	}
	return c, ok
}

// snsFor returns the SNS client for queue, reporting a failure.
func (r *regionClients) snsFor(ctx context.Context, queue string) (snsClient, bool) {
	f := queueConn(r.conn, queue)
	if c, ok := r.sns[f.region]; ok {
		return c, true
	}
	c, ok := r.a.connectSNS(ctx, r.cmd, f)
	if ok {
		r.sns[f.region] = c
	}
	return c, ok
}
