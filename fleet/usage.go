package fleet

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Usage is what the fleet table says about the shared controls at one
// moment, for operators (`sqsworker status --table`).
type Usage struct {
	// At is when the table was read (the Fleet's clock).
	At time.Time
	// Breakers are the shared breakers (BreakerOptions.Shared) that have
	// written their state, by name. A breaker that is not shared lives in
	// its process only: see Stats.Breakers or the metrics.
	Breakers []BreakerUsage
	// Caps are the cap keys with at least one slot whose lease has not
	// expired, by cap name and key.
	Caps []CapUsage
}

// BreakerUsage is a shared breaker's state in the table.
type BreakerUsage struct {
	Name string
	// Open reports that the fleet holds the breaker open, until OpenUntil;
	// each process then probes on its own.
	Open      bool
	OpenUntil time.Time
}

// CapUsage is one key of a cap: the slots in use across the fleet.
type CapUsage struct {
	Name, Key string
	// Slots is the number of slots held now (leases not expired).
	Slots int
	// Holders are the processes holding them (Options.Holder), each once.
	Holders []string
}

// Usage reads the shared breakers and the cap slots in use from the
// table, with a consistent Scan of the cap and breaker items (paginated;
// rate-limit and pause items are left out by the filter, but DynamoDB
// reads, and bills, the whole table). It is meant for operators, not for
// a job's path. IAM: dynamodb:Scan on the table.
func (f *Fleet) Usage(ctx context.Context) (Usage, error) {
	now := f.o.Now()
	u := Usage{At: now}
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(f.table),
		ConsistentRead:            aws.Bool(true),
		FilterExpression:          aws.String("begins_with(#pk, :cap) OR begins_with(#pk, :breaker)"),
		ExpressionAttributeNames:  map[string]string{"#pk": keyAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":cap": str("cap|"), ":breaker": str("breaker|")},
	}
	for {
		out, err := call(f, ctx, func(ctx context.Context) (*dynamodb.ScanOutput, error) { return f.client.Scan(ctx, in) })
		if err != nil {
			return u, f.explain(err, "reading the controls' usage (Scan)")
		}
		for _, item := range out.Items {
			u.add(item, now)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	sort.Slice(u.Breakers, func(i, j int) bool { return u.Breakers[i].Name < u.Breakers[j].Name })
	sort.Slice(u.Caps, func(i, j int) bool {
		a, b := u.Caps[i], u.Caps[j]
		return a.Name < b.Name || a.Name == b.Name && a.Key < b.Key
	})
	return u, nil
}

// add notes one cap or breaker item.
func (u *Usage) add(item map[string]types.AttributeValue, now time.Time) {
	kind, rest, _ := strings.Cut(strAttr(item, keyAttribute), "|")
	switch kind {
	case "breaker":
		until := time.UnixMilli(numAttr(item, attrOpenUntil))
		b := BreakerUsage{Name: rest}
		if until.After(now) {
			b.Open, b.OpenUntil = true, until
		}
		u.Breakers = append(u.Breakers, b)
	case "cap":
		name, key, _ := strings.Cut(rest, "|")
		c := CapUsage{Name: name, Key: key}
		seen := map[string]bool{}
		for holder, exp := range parseCap(item).holders {
			if exp <= now.UnixMilli() {
				continue
			}
			c.Slots++
			process := holder
			if i := strings.LastIndex(holder, "#"); i >= 0 {
				process = holder[:i]
			}
			if !seen[process] {
				seen[process] = true
				c.Holders = append(c.Holders, process)
			}
		}
		if c.Slots > 0 {
			sort.Strings(c.Holders)
			u.Caps = append(u.Caps, c)
		}
	}
}
