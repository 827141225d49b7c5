// Command console shows the operator console (package console) on a queue
// with something to see: it creates a queue pair, sends 40 order jobs, and
// runs a worker that dead-letters some of them — cards declined (bad input,
// failing for good) and, during a 30-second inventory outage, jobs whose
// service was down — then serves the console with actions on, the worker's
// live statistics included, until interrupted.
//
//	make console
//
// runs it against the local emulators (bash localstack/with-aws.sh go run
// ./examples/console) and prints the URL to open: http://127.0.0.1:9470/
// unless -addr says otherwise. In the console, open the queue's
// dead-letter queue: the failures are grouped by reason. Once the outage is
// over, redrive the inventory group: the worker handles those jobs now. A
// declined card fails again and comes back to the dead-letter queue. The
// worker watches the queue's pause switch in a fleet table (package fleet):
// pause the queue on the console's Fleet page and the Workers page shows
// the worker paused within 2 s; resume it. It deletes its queues and table
// when it stops.
package main
