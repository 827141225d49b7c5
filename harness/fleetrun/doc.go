// Package fleetrun measures package fleet's controls with real worker
// processes: several copies of this package's test binary, started as
// children, each running a worker.Worker against the SQS emulator with
// the fleet controls on DynamoDB Local, and recording every job's start
// and end in files of its own (one write each, so a record survives
// SIGKILL). The parent sends the jobs, starts and kills the children and
// checks the records.
//
// TestRateLimitAcrossProcesses: 20 handlers in 4 processes share a limit
// of 50 jobs/s; no 10 s window may start more than 520 jobs (4% over), a
// job may cost at most one DynamoDB request, and at least 95% of the
// limit must be used while the backlog lasts (held in the measured run,
// FLEETRUN_SECONDS set; the bounded run in `make test` shares the cores
// with every other package and reports it).
//
// TestCapAcrossProcessesWithSIGKILL: a cap of 3 for one tenant across 4
// processes; one process running a job is SIGKILLed mid-run; never more
// than 3 jobs run at once (from the records, a killed process's jobs
// ending at the kill), 3 run at once again within the lease, and every
// job is done, none dead-lettered.
//
// TestTenantFairnessAcrossProcesses: tenant A floods, then tenant B
// sends a few; B's waiting time with and without a cap per tenant.
//
// TestTenantFloodAcrossProcesses: the flood — tenant A sends jobs
// of 500 ms under a cap of 5 per tenant at the cap's defaults, on a queue
// at dlq.Setup's defaults (maxReceiveCount 5), then tenant B: every job
// done, none dead-lettered, A's slots in use while its backlog lasts, B's
// wait with the cap against without it. FLEETRUN_FULL=1 runs the 20,000
// jobs (about 45 minutes with the run without the cap; give go test
// -timeout 100m).
//
// TestControlCosts: DynamoDB requests per job for each control (rate
// limit, cap, shared breaker, pause), counted by the items they touch;
// FLEETRUN_COSTS=1 measures jobs of 0, 50 and 200 ms (400 jobs a run),
// else 200 ms (200 jobs).
//
// TestBreakerProbesAcrossProcesses: a breaker as each worker's
// ReceiveGate through an 8 s outage: the messages received while it is
// not closed are at most those that arrived meanwhile plus one per
// process per half-open window.
//
// TestFailOpenPaceWhenDynamoDBRefuses: with FailOpen, jobs keep at least
// 80% of their pace once DynamoDB refuses connections.
//
// TestDynamoDBFaultsAndClockSkewAcrossProcesses: the fleet table behind
// the fault proxy (package faultproxy: throttling, HTTP 500, dropped
// answers, resets, then a 3 s outage), 4 processes with a cap of 3 per
// tenant and a shared rate limit, one clock 2 s ahead and one 2 s
// behind: the controls fail closed, the cap and the limit hold, nothing
// runs unchecked, everything is done, nothing is dead-lettered.
//
// TestPauseAcrossProcesses: 4 processes watching the queue's pause switch;
// no job starts later than 5 s after Pause, every process starts jobs
// again after Resume, nothing is dead-lettered.
//
// All run a bounded version in `make test`; FLEETRUN_SECONDS sets the
// length of the rate-limit run, FLEETRUN_CAP_JOBS, FLEETRUN_FAIR_A,
// FLEETRUN_FAIR_B, FLEETRUN_FLOOD_A, FLEETRUN_FLOOD_B and
// FLEETRUN_FAULT_JOBS the sizes of the others (BENCHMARKS.md has the
// figures and the commands).
package fleetrun
