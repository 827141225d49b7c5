package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/internal/awscall"
)

// Subscription dead-letter queues. The dead-letter queue of a queue's SNS
// subscription (where SNS puts what it could not deliver to the queue) has
// the same pages as a queue's own, under /queues/{queue}/topics/{topic}/dlq:
// triage, search, message, and the actions, except editing a body. Its
// Redrive goes through fanout.Redrive: to the subscribed queue only, never
// back to the topic, which would deliver the messages again to every other
// subscriber.

// subscriptionRoutes registers a subscription dead-letter queue's pages
// under the prefix p (with Options.SNS).
func (h *handler) subscriptionRoutes(mux *http.ServeMux, p string) {
	base := p + "/queues/{queue}/topics/{topic}/dlq"
	mux.HandleFunc("GET "+base, h.triage)
	mux.HandleFunc("GET "+base+"/search", h.search)
	mux.HandleFunc("GET "+base+"/messages/{id}", h.message)
	mux.HandleFunc("POST "+base+"/redrive", h.action(h.redrive))
	mux.HandleFunc("POST "+base+"/delete", h.action(h.delete))
	mux.HandleFunc("POST "+base+"/purge", h.action(h.purge))
}

// dlqOf resolves the dead-letter queue the request's path names: the
// queue's own, or with {topic} the one of the queue's subscription to that
// topic (then with the subscription).
func (h *handler) dlqOf(r *http.Request) (dlq.Target, *fanout.Subscription, error) {
	ctx, queue, topic := r.Context(), r.PathValue("queue"), r.PathValue("topic")
	if topic == "" {
		t, err := h.target(ctx, queue)
		return t, nil, err
	}
	if h.opts.SNS == nil {
		return dlq.Target{}, nil, errors.New("subscription dead-letter queues need SNS (Options.SNS)")
	}
	u, err := h.shownQueue(ctx, queue)
	if err != nil {
		return dlq.Target{}, nil, err
	}
	out, err := awscall.SQS(ctx, awscall.Rule{}, h.client.GetQueueAttributes, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return dlq.Target{}, nil, fmt.Errorf("reading queue %s: %w", queue, err)
	}
	sub, err := fanout.FindSubscription(ctx, h.opts.SNS, out.Attributes[string(types.QueueAttributeNameQueueArn)], topic)
	if err != nil {
		return dlq.Target{}, nil, err
	}
	t, err := fanout.Target(ctx, h.client, sub)
	if err != nil {
		return dlq.Target{}, nil, err
	}
	return t, &sub, nil
}

// dlqBase is the path of the dead-letter queue page the request is under
// ("" outside one).
func (h *handler) dlqBase(r *http.Request) string {
	queue, topic := r.PathValue("queue"), r.PathValue("topic")
	switch {
	case queue == "":
		return ""
	case topic != "":
		return h.path("/queues/" + url.PathEscape(queue) + "/topics/" + url.PathEscape(topic) + "/dlq")
	}
	return h.path("/queues/" + url.PathEscape(queue) + "/dlq")
}

// subscriptionReason is the failure reason shown for a message in a
// subscription's dead-letter queue that carries no provenance.
func subscriptionReason(queue string) string {
	return "not delivered: SNS could not deliver it to queue " + queue + " (a subscription's dead-letter queue; see its attributes, and the subscription's findings on the Queues page)"
}

// redriveTo runs the redrive of a dead-letter queue: fanout.Redrive for a
// subscription's (to the subscribed queue only), dlq.Redrive otherwise.
func (h *handler) redriveTo(sub *fanout.Subscription) func(ctx context.Context, t dlq.Target, opts dlq.RedriveOptions) (dlq.RedriveResult, error) {
	if sub == nil {
		return func(ctx context.Context, t dlq.Target, opts dlq.RedriveOptions) (dlq.RedriveResult, error) {
			return dlq.Redrive(ctx, h.client, t, opts)
		}
	}
	s := *sub
	return func(ctx context.Context, _ dlq.Target, opts dlq.RedriveOptions) (dlq.RedriveResult, error) {
		return fanout.Redrive(ctx, h.client, s, opts)
	}
}
