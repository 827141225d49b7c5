package worker

import "github.com/sqsworker/sqsworker/internal/sqslimit"

// What SQS charges, as its public pricing states it: requests are billed per
// million, and each started 64 KiB chunk of a request's payload counts as one
// request (a call carrying 200 KiB of messages is billed as 4 requests).
// Prices are those of us-east-1 for the first 100 billion requests of a
// month; other regions and higher volumes differ, so Pricing takes yours.
const (
	// PriceStandard is the price, in US dollars, of one million requests on
	// standard queues.
	PriceStandard = 0.40
	// PriceFIFO is the price, in US dollars, of one million requests on
	// FIFO queues.
	PriceFIFO = 0.50
)

// Pricing is what SQS charges, for Stats.Cost. Every field's zero value
// selects the documented default.
type Pricing struct {
	// PerMillion is the price, in US dollars, of one million billed
	// requests. Zero value: PriceStandard (0.40). FIFO queues cost
	// PriceFIFO (0.50). SQS's free tier (the first million requests of each
	// month, shared by the whole account) is not subtracted.
	PerMillion float64
	// ChunkBytes is the payload SQS bills as one request. Zero value:
	// 64 KiB, SQS's billing chunk, which Stats.BilledRequests counts call by call,
	// exactly. Any other value is estimated from the totals: per API, the
	// larger of the calls made and ⌈PayloadBytes / ChunkBytes⌉.
	ChunkBytes int
}

func (p Pricing) withDefaults() Pricing {
	if p.PerMillion <= 0 {
		p.PerMillion = PriceStandard
	}
	if p.ChunkBytes <= 0 {
		p.ChunkBytes = sqslimit.BillingChunk
	}
	return p
}

// Cost is what a Worker's SQS calls cost, as Stats.Cost estimates it.
type Cost struct {
	// Messages is the number of messages received (Stats.Received).
	Messages int64
	// Requests is the number of SQS calls made (Stats.TotalRequests).
	Requests int64
	// BilledRequests is Requests as SQS bills them: a call carrying more
	// than one billing chunk of payload counts once per started chunk.
	BilledRequests int64
	// RequestsPerMessage is Requests / Messages (0 without messages).
	RequestsPerMessage float64
	// BilledPerMessage is BilledRequests / Messages (0 without messages).
	BilledPerMessage float64
	// USD is the estimated price of BilledRequests.
	USD float64
	// USDPerMillionMessages is what a million messages cost at this rate:
	// BilledPerMessage × Pricing.PerMillion.
	USDPerMillionMessages float64
	// PerMillionRequests is the price used, in US dollars per million
	// billed requests.
	PerMillionRequests float64
}

// PerMillion returns the estimated cost, in US dollars, of a million units
// of work when n of them took these requests: a demo or a benchmark that
// knows how many jobs it sent passes that number (a job received three
// times is three messages, but one job).
func (c Cost) PerMillion(n int64) float64 {
	if n <= 0 {
		return 0
	}
	return float64(c.BilledRequests) / float64(n) * c.PerMillionRequests
}

// Cost estimates what the worker's SQS calls cost so far, and what a
// million messages cost at the same rate:
//
//	billed           = Σ over calls of max(1, ⌈payload bytes / 64 KiB⌉)
//	USD              = billed / 1,000,000 × price per million requests
//	USD per million  = billed / messages received × price per million requests
//
// It counts the worker's own requests (receives, deletes, heartbeat and
// retry visibility changes, dead-letter copies, the queue checks in New),
// not the producer's sends. Every receive counts, including the empty long
// polls of an idle queue: at the default 20 s wait, each poller makes up to
// 3 of them a minute, about 130,000 a month, which the free tier absorbs.
func (s Stats) Cost(p Pricing) Cost {
	p = p.withDefaults()
	c := Cost{Messages: s.Received, Requests: s.TotalRequests(), PerMillionRequests: p.PerMillion}
	for api, n := range s.Requests {
		if p.ChunkBytes == sqslimit.BillingChunk && s.BilledRequests != nil {
			c.BilledRequests += s.BilledRequests[api]
			continue
		}
		c.BilledRequests += max(n, (s.PayloadBytes[api]+int64(p.ChunkBytes)-1)/int64(p.ChunkBytes))
	}
	c.USD = float64(c.BilledRequests) / 1e6 * p.PerMillion
	if c.Messages > 0 {
		c.RequestsPerMessage = float64(c.Requests) / float64(c.Messages)
		c.BilledPerMessage = float64(c.BilledRequests) / float64(c.Messages)
		c.USDPerMillionMessages = c.BilledPerMessage * p.PerMillion
	}
	return c
}
