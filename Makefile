# sqsworker — the two commands a new machine needs:
#   make demo   run the demo against a local AWS it starts itself
#   make console the operator console on a demo queue with failures to look at (prints its URL)
#   make test   vet + race tests, integration and browser tests required, against a local AWS it
#               starts itself (installs the emulators and, as root, Debian's chromium when missing)
#   make chaos  the chaos suite (faults, kill -9, restarts) against a local AWS it starts itself;
#               VARIANT=graceful|chaos|blackhole|throttle|scale|fifo|drain|producer|fanout|idempotency|unique|lambda|soak|all
#               (see RELIABILITY.md)
#
# Both use AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_SQS + AWS_ENDPOINT_URL_DYNAMODB when set
# (e.g. LocalStack from docker-compose.yml); otherwise they start the offline emulators
# (localstack/start.sh) and stop them again when done, even on failure.

GO        ?= go
WITH_AWS  := bash localstack/with-aws.sh
# NESTED lists the modules inside the repository besides the root one (they
# keep their dependencies out of the library's go.mod); test, unit, lint,
# bench and fuzz cover them too. VETTED adds the modules that are only vetted
# (by test, unit and lint): bench/ is programs without tests (make
# bench-latency runs it), so the test runs skip it and keep CI's time.
NESTED    := sqsotel console/e2e
VETTED    := $(NESTED) bench
# in_nested runs a go command in every nested module: $(call in_nested,test ./...);
# in_vetted in every vetted one: $(call in_vetted,vet ./...).
in_nested  = for m in $(NESTED); do (cd $$m && $(GO) $(1)) || exit 1; done
in_vetted  = for m in $(VETTED); do (cd $$m && $(GO) $(1)) || exit 1; done
# STATICCHECK is pinned: a newer release may add checks, and lint must not
# change under a commit that did not touch the code.
STATICCHECK_PKG := honnef.co/go/tools/cmd/staticcheck@v0.8.2
STATICCHECK     := $(GO) run $(STATICCHECK_PKG)
TESTFLAGS ?=
BENCHTIME ?= 3x

.DEFAULT_GOAL := test

.PHONY: api apicount mutate test conformance unit lint bench bench-latency demo console console-screenshots chaos emulators-start emulators-stop fuzz

# mutate is the mutation check (not part of test): harness/mutate applies each of
# its recorded one-line changes to the code that decides a job's fate (through
# go test -overlay: the tree is never written), runs the tests that must notice
# it, and fails if one survives. Its last result is in RELIABILITY.md.
mutate:
	$(WITH_AWS) $(GO) run ./harness/mutate $(MUTATEFLAGS)

# test prints the conformance suite's summary first (fake and emulator), then runs
# every package. -count=1: integration results depend on the emulators, never cache them.
test:
	@bash localstack/install-chromium.sh
	$(WITH_AWS) bash -c 'export SQSWORKER_REQUIRE_INTEGRATION=1 && $(GO) vet ./... && $(call in_vetted,vet ./...) && $(MAKE) --no-print-directory conformance && $(GO) test -race -count=1 -timeout 15m $(TESTFLAGS) ./... && $(call in_nested,test -race -count=1 -timeout 15m $(TESTFLAGS) ./...)'

# conformance runs the SQS and SNS conformance suites against the fakes and the
# configured endpoint, and the Scheduler suite against schedulestest (directly and
# through the SDK client over schedulerhttp), and prints one line per backend (the
# full log on failure).
conformance:
	@out=$$(mktemp); \
	if $(GO) test -race -count=1 -v -run '^TestConformance' ./sqstest ./sqstest/snstest ./harness/conformance ./schedules/schedulestest ./harness/schedulerhttp >"$$out" 2>&1; then \
		grep -E 'conformance suite:' "$$out" | sed -E 's/^ *[a-z_]+\.go:[0-9]+: //'; \
		grep -E '^ok' "$$out"; rm -f "$$out"; \
	else cat "$$out"; rm -f "$$out"; exit 1; fi

# unit runs the tests that need no emulator (integration tests skip with a visible reason).
unit:
	$(GO) vet ./... && $(call in_vetted,vet ./...) && export SQSWORKER_REQUIRE_INTEGRATION=0 AWS_ENDPOINT_URL_SQS= && $(GO) test -race -short ./... && $(call in_nested,test -race -short ./...)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(call in_vetted,vet ./...)
	@for f in localstack/*.sh localstack/init/ready.d/*.sh .ci/run; do bash -n "$$f" || exit 1; done
	$(STATICCHECK) ./...
	@$(call in_vetted,run $(STATICCHECK_PKG) ./...)
	@echo "lint: ok"

# bench-latency runs sqsworker next to a minimal SDK loop and gocloud's
# awssnssqs driver (bench/, a Go module of its own) at 0 and 15 ms per call.
bench-latency:
	$(WITH_AWS) bash -c 'cd bench && $(GO) run ./latency -json latency.json'

bench:
	$(WITH_AWS) bash -c 'export SQSWORKER_REQUIRE_INTEGRATION=1 && $(GO) test -run "^$$" -bench . -benchmem -benchtime $(BENCHTIME) ./... && $(call in_nested,test -run "^$$" -bench . -benchmem -benchtime $(BENCHTIME) ./...)'

demo:
	$(WITH_AWS) $(GO) run ./examples/demo

# console serves the operator console (package console) with actions on, on a
# demo queue pair whose worker dead-letters some jobs and watches the queue's
# pause switch in a fleet table, until Ctrl-C; it prints
# the URL (http://127.0.0.1:9470/ unless CONSOLEADDR says otherwise).
# It runs the built program, not go run: go run exits 1 when interrupted,
# whatever the program does, and Ctrl-C is how the console demo ends (it then
# deletes its queues and table, says so, and exits 0).
CONSOLEADDR ?= 127.0.0.1:9470
console:
	$(GO) build -o bin/console ./examples/console
	$(WITH_AWS) bin/console -addr $(CONSOLEADDR)

# console-screenshots runs the console's browser tests and keeps their
# screenshots in docs/console (the README shows them).
console-screenshots:
	$(WITH_AWS) bash -c 'export SQSWORKER_REQUIRE_INTEGRATION=1 SQSWORKER_SCREENSHOTS=$(CURDIR)/docs/console && cd console/e2e && $(GO) test -count=1 -run InChromium ./...'

# chaos runs one variant of the chaos suite (harness/chaos) and prints its report; the run's
# files (worker records, proxy log, report.txt, report.json) go to CHAOSOUT (default: a new
# temporary directory). Zero values keep the variant's own settings.
VARIANT  ?= chaos
SEED     ?= 1
JOBS     ?= 0
WORKERS  ?= 0
DURATION ?= 0
CHAOSOUT ?=
CHAOSFLAGS ?=
chaos:
	$(WITH_AWS) $(GO) run ./harness/chaos/cmd/chaos -variant $(VARIANT) -seed $(SEED) -jobs $(JOBS) \
		-workers $(WORKERS) -duration $(DURATION) $(if $(CHAOSOUT),-out $(CHAOSOUT)) $(CHAOSFLAGS)

# fuzz runs every fuzz target for FUZZTIME each (the parsers of outside input).
FUZZTIME ?= 30s
fuzz:
	@set -e; for pkg in ./retry ./internal/deadletter ./worker/sqslambda ./fanout ./internal/queuepolicy ./internal/schedule ./s3payload ./idempotency ./harness/faultproxy ./sqsotel; do \
		dir=.; case $$pkg in ./sqsotel) dir=sqsotel; pkg=.;; esac; \
		for fz in $$(cd $$dir && $(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$dir $$pkg $$fz"; (cd $$dir && $(GO) test -run '^$$' -fuzz "^$$fz\$$" -fuzztime $(FUZZTIME) $$pkg); \
		done; \
	done

emulators-start:
	@bash localstack/start.sh

emulators-stop:
	@bash localstack/stop.sh

# api rewrites api/v1.txt, the checked-in list of every exported identifier
# (internal/apicheck); TestAPIFile fails when the code and the file differ.
# Commit the file with a CHANGELOG line. apicount prints the names per package.
api:
	$(GO) test ./internal/apicheck -run '^TestAPIFile$$' -update
apicount:
	@$(GO) run ./internal/apicheck/cmd/apifile -count
