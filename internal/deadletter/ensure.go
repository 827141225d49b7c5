package deadletter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/sqserr"
)

// ErrWouldLower is wrapped by the error a setup returns when its options
// would lower an existing queue's maxReceiveCount or retention without
// being allowed to (dlq.ErrWouldLower is this value). Nothing was changed.
var ErrWouldLower = errors.New("dlq: setup would lower an existing setting")

// Change is one thing a setup created or changed. It has dlq.Change's
// fields, in the same order, so each converts to the other.
type Change struct {
	Resource  string `json:"resource"`
	Name      string `json:"name"`
	Attribute string `json:"attribute,omitempty"`
	From      string `json:"from,omitempty"`
	To        string `json:"to,omitempty"`
}

// Queue is a queue as a setup found it.
type Queue struct {
	URL   string
	Attrs map[string]string // every attribute
}

// FindQueue returns the queue called name with all its attributes, or nil
// when there is none.
func FindQueue(ctx context.Context, client QueueAPI, name string) (*Queue, error) {
	out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		if sqserr.NotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("setup: looking up queue %s: %w", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	attrs, err := GetAttributes(ctx, client, url, string(types.QueueAttributeNameAll))
	if err != nil {
		return nil, fmt.Errorf("setup: reading queue %s: %w", name, err)
	}
	return &Queue{URL: url, Attrs: attrs}, nil
}

// Ensure creates the queue called name with want when e is nil, or sets on
// the existing queue e the attributes of want that differ, recording each
// change (resource names the queue's role: "queue", "dead-letter queue").
// It returns the queue's URL.
func Ensure(ctx context.Context, client SetupAPI, resource, name string, fifo bool, e *Queue, want map[string]string, changes *[]Change) (string, error) {
	if e == nil {
		attrs := map[string]string{}
		for k, v := range want {
			attrs[k] = v
		}
		if fifo {
			attrs[AttrFifoQueue] = "true"
		}
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return "", fmt.Errorf("setup: creating %s %s: %w", resource, name, err)
		}
		*changes = append(*changes, Change{Resource: resource, Name: name})
		return aws.ToString(out.QueueUrl), nil
	}
	set := map[string]string{}
	for _, k := range sortedKeys(want) {
		if v := want[k]; !sameAttribute(k, e.Attrs[k], v) {
			set[k] = v
			*changes = append(*changes, attributeChanges(resource, name, k, e.Attrs[k], v)...)
		}
	}
	if len(set) > 0 {
		if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(e.URL), Attributes: set}); err != nil {
			return "", fmt.Errorf("setup: configuring %s %s: %w", resource, name, err)
		}
	}
	return e.URL, nil
}

// sameAttribute compares a queue attribute's current value with the wanted
// one: RedrivePolicies by their fields, the rest as text.
func sameAttribute(name, have, want string) bool {
	if name == AttrRedrivePolicy && have != "" {
		a, err1 := ParseRedrivePolicy(have)
		b, err2 := ParseRedrivePolicy(want)
		return err1 == nil && err2 == nil && a == b
	}
	return have == want
}

// attributeChanges describes setting attribute name from have to want; a
// RedrivePolicy change is described by its fields.
func attributeChanges(resource, queue, name, have, want string) []Change {
	if name == AttrRedrivePolicy && have != "" {
		a, err1 := ParseRedrivePolicy(have)
		b, err2 := ParseRedrivePolicy(want)
		if err1 == nil && err2 == nil {
			var cs []Change
			if a.TargetARN != b.TargetARN {
				cs = append(cs, Change{Resource: resource, Name: queue, Attribute: "deadLetterTargetArn", From: a.TargetARN, To: b.TargetARN})
			}
			if a.MaxReceiveCount != b.MaxReceiveCount {
				cs = append(cs, Change{Resource: resource, Name: queue, Attribute: "maxReceiveCount", From: strconv.Itoa(a.MaxReceiveCount), To: strconv.Itoa(b.MaxReceiveCount)})
			}
			return cs
		}
	}
	return []Change{{Resource: resource, Name: queue, Attribute: name, From: have, To: want}}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// QueueSpec describes one queue for EnsureQueue.
type QueueSpec struct {
	// Resource names the queue's role in Changes, such as "queue" or
	// "dead-letter queue".
	Resource string
	// Name is the queue's name (with ".fifo" for a FIFO queue).
	Name string
	// FIFO makes a FIFO queue; an existing queue of the other type is an
	// error.
	FIFO bool
	// Set are attributes the queue must have: set when they differ.
	Set map[string]string
	// Initial are attributes a new queue gets, and an existing one keeps.
	Initial map[string]string
	// AllowLowering lets Set lower an existing MessageRetentionPeriod; zero
	// value: EnsureQueue refuses (ErrWouldLower) and changes nothing.
	AllowLowering bool
}

// EnsureQueue creates the queue spec describes if it does not exist, or
// sets on the existing queue the attributes of spec.Set that differ, with
// dlq.Setup's rules: nothing else changes, and a lower retention needs
// AllowLowering. It returns the queue's URL, its attributes as they are now
// and what it changed. fanout.Setup uses it for a subscription's
// dead-letter queue.
func EnsureQueue(ctx context.Context, client SetupAPI, spec QueueSpec) (string, map[string]string, []Change, error) {
	e, err := FindQueue(ctx, client, spec.Name)
	if err != nil {
		return "", nil, nil, err
	}
	if e != nil && (e.Attrs[AttrFifoQueue] == "true") != spec.FIFO {
		return "", nil, nil, fmt.Errorf("setup: queue %s exists and is %s, but %s was asked for; SQS cannot change a queue's type: use another name, or delete the queue first",
			spec.Name, QueueKind(!spec.FIFO), QueueKind(spec.FIFO))
	}
	want := map[string]string{}
	if e == nil {
		maps.Copy(want, spec.Initial)
	}
	maps.Copy(want, spec.Set)
	if e != nil && !spec.AllowLowering && want[AttrRetention] != "" {
		have, ok1 := SecondsAttr(e.Attrs, AttrRetention)
		w, ok2 := SecondsAttr(want, AttrRetention)
		if ok1 && ok2 && w < have {
			return "", nil, nil, Wrap(ErrWouldLower, nil, "setup: refusing to lower %s %s's MessageRetentionPeriod from %s to %s: it deletes messages sooner; nothing was changed. Leave the option out to keep the current value, or allow it explicitly (`sqsworker setup --force`)",
				spec.Resource, spec.Name, HumanDuration(have), HumanDuration(w))
		}
	}
	var changes []Change
	url, err := Ensure(ctx, client, spec.Resource, spec.Name, spec.FIFO, e, want, &changes)
	if err != nil {
		return "", nil, nil, err
	}
	attrs, err := GetAttributes(ctx, client, url, string(types.QueueAttributeNameAll))
	if err != nil {
		return "", nil, nil, fmt.Errorf("setup: reading %s %s: %w", spec.Resource, spec.Name, err)
	}
	return url, attrs, changes, nil
}
