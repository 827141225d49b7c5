package contract

import "testing"

// TestContractFake runs every scenario through both runtimes on the
// in-memory fake, in virtual time.
func TestContractFake(t *testing.T) {
	Run(t, Fake(), Runtimes(), Scenarios())
}

// TestContractEmulator runs the scenarios the fault proxy can inject through
// both runtimes on the local SQS emulator. Under make test
// (SQSWORKER_REQUIRE_INTEGRATION=1) a missing emulator fails it.
func TestContractEmulator(t *testing.T) {
	Run(t, Emulator(t), Runtimes(), Scenarios())
}
