package worker

// ErrAlreadyRunning is what Run returns when the Worker is already running
// or has run (for the tests of package worker_test).
var ErrAlreadyRunning = errAlreadyRunning
