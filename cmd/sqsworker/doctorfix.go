package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
)

// The lint's fixes name the attribute value to set (a RedrivePolicy JSON, a
// number of seconds), which suits a program; doctor's reader runs commands.
// setupFixes turns each fix that `sqsworker setup` can apply into that
// command; a fix it does not recognise is left as it is.

var (
	fixMaxReceive = regexp.MustCompile(`"maxReceiveCount":(\d+)`)
	fixDLQARN     = regexp.MustCompile(`"deadLetterTargetArn":"[^"]*:([^":]+)"`)
	fixSeconds    = regexp.MustCompile(`to at least (\d+)(?: seconds)?`)
	fixTrailing   = regexp.MustCompile(`\(([^()]*)\)$`)
)

// setupFixes rewrites the fixes of fs for queue (as the user named it).
func setupFixes(queue string, fs []dlq.Finding) {
	for i := range fs {
		fs[i].Fix = setupFix(queue, fs[i])
	}
}

func setupFix(queue string, f dlq.Finding) string {
	setup := func(flags string) string { return fmt.Sprintf("`sqsworker setup %s %s`", queue, flags) }
	why := func() string {
		if m := fixTrailing.FindStringSubmatch(strings.TrimSpace(f.Fix)); m != nil {
			return " (" + m[1] + ")"
		}
		return ""
	}
	seconds := func() (time.Duration, bool) {
		m := fixSeconds.FindStringSubmatch(f.Fix)
		if m == nil {
			return 0, false
		}
		n, err := strconv.Atoi(m[1])
		return time.Duration(n) * time.Second, err == nil
	}
	switch f.Code {
	case "max-receive-count-low", "lambda-max-receive-count":
		if m := fixMaxReceive.FindStringSubmatch(f.Fix); m != nil && strings.HasPrefix(f.Fix, "set queue ") {
			return "run " + setup("--max-receive-count "+m[1]) + why()
		}
	case "fifo-max-receive-count":
		if m := fixMaxReceive.FindStringSubmatch(f.Fix); m != nil {
			w := ""
			if _, rest, ok := strings.Cut(f.Fix, "} ("); ok {
				w, _, _ = strings.Cut(rest, ")")
				w = " (" + w + ")"
			}
			return "run " + setup("--max-receive-count "+m[1]) + w
		}
	case "no-redrive-policy":
		if m := fixMaxReceive.FindStringSubmatch(f.Fix); m != nil {
			dlqName := "a dead-letter queue"
			if a := fixDLQARN.FindStringSubmatch(f.Fix); a != nil {
				dlqName = "dead-letter queue " + a[1]
			}
			return "run " + setup("--max-receive-count "+m[1]) + ": it creates " + dlqName + " and sets the RedrivePolicy"
		}
	case "retention-short":
		if d, ok := seconds(); ok && strings.HasPrefix(f.Fix, "set queue ") {
			return "run " + setup("--retention "+formatDuration(roundUp(d, time.Hour))) + " (SQS keeps messages at most 14d)"
		}
	case "visibility-too-short", "lambda-visibility":
		if d, ok := seconds(); ok && strings.HasPrefix(f.Fix, "set queue ") {
			return "run " + setup("--visibility-timeout "+formatDuration(d)) + why()
		}
	case "dlq-retention-not-longer":
		if strings.HasPrefix(f.Fix, "set dead-letter queue ") && strings.Contains(f.Fix, "1209600") {
			return "run " + setup("--dlq-retention 14d") + " (14 days, the most SQS allows)"
		}
	}
	return f.Fix
}

// roundUp rounds d up to a multiple of unit.
func roundUp(d, unit time.Duration) time.Duration {
	return (d + unit - 1) / unit * unit
}
