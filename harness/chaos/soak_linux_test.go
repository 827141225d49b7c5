package chaos

import (
	"os"
	"testing"
)

// TestReadStatus reads this process's RSS and peak from /proc.
func TestReadStatus(t *testing.T) {
	rss, err := readStatus(os.Getpid(), "VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	peak, err := readStatus(os.Getpid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 || peak < rss {
		t.Fatalf("VmRSS %d, VmHWM %d: want at least 1 MiB and the peak at least the RSS", rss, peak)
	}
	if _, err := readStatus(os.Getpid(), "VmNothing"); err == nil {
		t.Fatal("a missing field read without an error")
	}
}
