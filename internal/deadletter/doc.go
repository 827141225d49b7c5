// Package deadletter is the dead-letter machinery the settlement engine
// (internal/settle), the public package dlq and the other setup and lint
// tools share, so that no runtime package imports dlq and each mechanism is
// written once:
//
//   - discovery: Discover reads a queue's RedrivePolicy and resolves its
//     dead-letter queue to a Target (the runtimes at start-up, dlq.Discover);
//   - the dead-letter copy: a Copier builds the SendMessage request that
//     carries a failed message to its dead-letter queue with its Provenance
//     in message attributes, within SQS's attribute and size limits, through
//     an Offloader when the copy would not fit; a Mover sends it and deletes
//     the original (tests and tools);
//   - provenance: the attribute names (AttrPrefix …), ParseProvenance and
//     StripProvenance;
//   - queue setup: FindQueue, Ensure and EnsureQueue create or adjust a
//     queue and report each Change (dlq.Setup, fanout.Setup);
//   - the rules and defaults dlq documents: RecommendedMaxReceiveCount,
//     Setup's maxReceiveCount defaults, the tools' hold and rate, and the
//     finding codes Lint reports.
//
// dlq's package doc is the user's description of all of it.
package deadletter
