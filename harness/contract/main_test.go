package contract

import (
	"flag"
	"os"
	"testing"
)

// emulatorParallel is how many emulator scenarios run at once. They spend
// nearly all their time waiting for SQS's clock (retry delays, visibility
// timeouts), not on a CPU, so -parallel's default (GOMAXPROCS: 2 under make
// test) would serialize about two minutes of waiting.
const emulatorParallel = "64"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", emulatorParallel); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
