package settle

import "github.com/sqsworker/sqsworker/retry"

// maxDeliveries returns how many times p lets a message be delivered: the
// first attempt plus every retry before Delay gives up. It stops counting
// at 1000, the largest maxReceiveCount SQS accepts. CheckPolicy compares it
// with a queue's maxReceiveCount: when that is lower, SQS dead-letters a
// message before the policy gives up.
func maxDeliveries(p retry.Policy) int {
	n := 1
	for n < 1000 {
		if _, again := p.Delay(n); !again {
			break
		}
		n++
	}
	return n
}
