package dlq

import (
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/sqstest"
)

// Lint reports a DLQ smaller than its source, with the fix.
func TestLintDLQMaxMessageSizeSmaller(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := goodPair(t, f, "orders", nil)
	if got := lintFindings(t, f, src, LintOptions{}); len(got) != 0 {
		t.Fatalf("equal sizes: %v; want no finding", got)
	}
	setAttrs(t, f, dlq, map[string]string{"MaximumMessageSize": "262144"})
	fd := expectOnly(t, lintFindings(t, f, src, LintOptions{}), deadletter.CodeDLQMaxMessageSizeSmaller, SeverityWarning, "MaximumMessageSize to 1048576", "offloader")
	if !strings.Contains(fd.Message, "256 KiB") || !strings.Contains(fd.Message, "1 MiB") {
		t.Errorf("message %q; want both sizes", fd.Message)
	}
	// A DLQ larger than its source is fine.
	setAttrs(t, f, src, map[string]string{"MaximumMessageSize": "131072"})
	if got := lintFindings(t, f, src, LintOptions{}); len(got) != 0 {
		t.Errorf("DLQ larger than the source: %v; want no finding", got)
	}
}
