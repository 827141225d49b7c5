// Package snstopic parses SNS topic ARNs, for the packages that take one:
// fanout (ParseTopicARN, Setup) and producer (NewTopic).
package snstopic

import (
	"fmt"
	"strings"
)

// ARN is a parsed SNS topic ARN: arn:PARTITION:sns:REGION:ACCOUNT:NAME.
type ARN struct {
	Partition, Region, Account, Name string
}

// Parse parses an SNS topic ARN.
func Parse(s string) (ARN, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[2] != "sns" || parts[3] == "" || parts[4] == "" || parts[5] == "" {
		return ARN{}, fmt.Errorf("%q is not an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME)", s)
	}
	return ARN{Partition: parts[1], Region: parts[3], Account: parts[4], Name: parts[5]}, nil
}

// String returns the ARN.
func (a ARN) String() string {
	return "arn:" + a.Partition + ":sns:" + a.Region + ":" + a.Account + ":" + a.Name
}

// FIFO reports whether the ARN names a FIFO topic (name ending in ".fifo").
func (a ARN) FIFO() bool { return strings.HasSuffix(a.Name, ".fifo") }
