package conformance

// Quirk names a declared, documented way a backend differs from real Amazon
// SQS. A behaviour that meets a declared quirk logs
// "QUIRK <backend>: <quirk>: <description>" and asserts that the quirky
// behaviour still happens, so the suite notices when the emulator is fixed
// (the declaration must then be removed). A backend without the quirk — the
// sqstest fake above all — must behave as real SQS does.
type Quirk string

// The quirks of fauxqs 1.9.2, each verified against it by this suite.
const (
	// QuirkNoDLQAdminActions: ListDeadLetterSourceQueues,
	// StartMessageMoveTask and ListMessageMoveTasks fail with InvalidAction.
	QuirkNoDLQAdminActions Quirk = "NoDLQAdminActions"

	// QuirkDeleteAcceptsAnyReceiptHandle: DeleteMessage and
	// DeleteMessageBatch succeed for a malformed receipt handle; real SQS
	// fails with ReceiptHandleIsInvalid (a batch entry with that code).
	QuirkDeleteAcceptsAnyReceiptHandle Quirk = "DeleteAcceptsAnyReceiptHandle"

	// QuirkChangeVisibilityNotInflight: ChangeMessageVisibility with a
	// malformed receipt handle, or with the handle of a deleted message,
	// fails with MessageNotInflight; real SQS says ReceiptHandleIsInvalid
	// (malformed) or InvalidParameterValue (deleted message).
	QuirkChangeVisibilityNotInflight Quirk = "ChangeVisibilityNotInflight"

	// QuirkLongPollWakesAllWaiters: one arriving message wakes every
	// ReceiveMessage long-polling the queue; all but one return empty at
	// once instead of waiting out WaitTimeSeconds.
	QuirkLongPollWakesAllWaiters Quirk = "LongPollWakesAllWaiters"

	// QuirkFIFOOneMessagePerGroup: a FIFO ReceiveMessage returns at most one
	// message of each message group; real SQS returns several messages of
	// the same group, in order, up to MaxNumberOfMessages.
	QuirkFIFOOneMessagePerGroup Quirk = "FIFOOneMessagePerGroup"

	// QuirkFifoSuffixMakesFIFO: CreateQueue with a name ending in .fifo but
	// no FifoQueue attribute creates a FIFO queue; real SQS rejects it with
	// InvalidParameterValue.
	QuirkFifoSuffixMakesFIFO Quirk = "FifoSuffixMakesFIFO"

	// QuirkNoVisibilityCapFromReceipt: ChangeMessageVisibility accepts any
	// value up to 43200 s whenever it is called; real SQS caps the total at
	// 12 hours from the receipt and rejects a value beyond the time left
	// with InvalidParameterValue.
	QuirkNoVisibilityCapFromReceipt Quirk = "NoVisibilityCapFromReceipt"

	// QuirkMessageAttributesAlwaysReturned: ReceiveMessage without
	// MessageAttributeNames returns every message attribute; real SQS
	// returns only the attributes asked for.
	QuirkMessageAttributesAlwaysReturned Quirk = "MessageAttributesAlwaysReturned"

	// QuirkPurgeNotRateLimited: a second PurgeQueue within 60 seconds
	// succeeds; real SQS fails it with PurgeQueueInProgress.
	QuirkPurgeNotRateLimited Quirk = "PurgeNotRateLimited"

	// QuirkPrefixedErrorCodes: errors the SDK does not model as types
	// (InvalidParameterValue, MissingParameter) carry the code
	// "AWS.SimpleQueueService.InvalidParameterValue" etc., because fauxqs
	// prefixes every x-amzn-query-error code; real SQS sends the plain
	// "InvalidParameterValue". Library code should compare codes with the
	// prefix stripped.
	QuirkPrefixedErrorCodes Quirk = "PrefixedErrorCodes"

	// QuirkNoRetention: messages never expire; real SQS deletes a message
	// once it is older than the queue's MessageRetentionPeriod.
	QuirkNoRetention Quirk = "NoRetention"

	// QuirkCountsIgnoreVisibilityExpiry: a message whose visibility timeout
	// ended is still counted in ApproximateNumberOfMessagesNotVisible (and
	// left out of ApproximateNumberOfMessages) until the next ReceiveMessage
	// on the queue; real SQS counts it as visible again (within its counts'
	// usual lag). Their sum stays right.
	QuirkCountsIgnoreVisibilityExpiry Quirk = "CountsIgnoreVisibilityExpiry"

	// QuirkNoAWSTraceHeader: the AWSTraceHeader system attribute set on a
	// send is accepted but never returned by ReceiveMessage; real SQS
	// returns it among the message's system attributes.
	QuirkNoAWSTraceHeader Quirk = "NoAWSTraceHeader"

	// QuirkFIFORedriveKeepsEnqueueTime: a FIFO queue's redrive keeps the
	// message's SentTimestamp in its FIFO dead-letter queue; real SQS resets
	// the enqueue time of a FIFO message to the move.
	QuirkFIFORedriveKeepsEnqueueTime Quirk = "FIFORedriveKeepsEnqueueTime"

	// QuirkNoStandardMessageGroupId: a standard queue accepts a
	// MessageGroupId (SQS fair queues) but ReceiveMessage does not return
	// it; real SQS returns it as the MessageGroupId system attribute.
	QuirkNoStandardMessageGroupId Quirk = "NoStandardMessageGroupId"
)

// Description says how a backend with the quirk differs from real SQS.
func (q Quirk) Description() string {
	switch q {
	case QuirkNoDLQAdminActions:
		return "ListDeadLetterSourceQueues, StartMessageMoveTask and ListMessageMoveTasks are not implemented (InvalidAction)"
	case QuirkDeleteAcceptsAnyReceiptHandle:
		return "DeleteMessage and DeleteMessageBatch accept a malformed receipt handle (real SQS: ReceiptHandleIsInvalid)"
	case QuirkChangeVisibilityNotInflight:
		return "ChangeMessageVisibility on a malformed handle or a deleted message fails with MessageNotInflight (real SQS: ReceiptHandleIsInvalid / InvalidParameterValue)"
	case QuirkLongPollWakesAllWaiters:
		return "one arriving message wakes every waiting long poll; the others return empty early instead of waiting out WaitTimeSeconds"
	case QuirkFIFOOneMessagePerGroup:
		return "a FIFO receive returns at most one message per message group (real SQS: several of a group, in order)"
	case QuirkFifoSuffixMakesFIFO:
		return "CreateQueue of a name ending in .fifo without FifoQueue=true creates a FIFO queue (real SQS: InvalidParameterValue)"
	case QuirkNoVisibilityCapFromReceipt:
		return "ChangeMessageVisibility ignores the 12 h cap counted from receipt (real SQS: InvalidParameterValue beyond the time left)"
	case QuirkMessageAttributesAlwaysReturned:
		return "ReceiveMessage returns message attributes that were not asked for"
	case QuirkPurgeNotRateLimited:
		return "a second PurgeQueue within 60 s succeeds (real SQS: PurgeQueueInProgress)"
	case QuirkPrefixedErrorCodes:
		return `unmodelled error codes read "AWS.SimpleQueueService.InvalidParameterValue" (real SQS: "InvalidParameterValue")`
	case QuirkNoRetention:
		return "messages never expire (MessageRetentionPeriod is stored but not enforced)"
	case QuirkCountsIgnoreVisibilityExpiry:
		return "a message whose visibility timeout ended counts as not visible until the next ReceiveMessage on the queue (real SQS: visible again)"
	case QuirkNoAWSTraceHeader:
		return "the AWSTraceHeader system attribute of a send is accepted but not returned on receive (real SQS: returned)"
	case QuirkFIFORedriveKeepsEnqueueTime:
		return "a FIFO message redriven to its FIFO dead-letter queue keeps its SentTimestamp (real SQS: the enqueue time resets to the move)"
	case QuirkNoStandardMessageGroupId:
		return "a MessageGroupId sent to a standard queue (fair queues) is accepted but not returned on receive (real SQS: returned)"
	}
	return "undocumented quirk"
}

// FauxqsQuirks returns the quirks of fauxqs 1.9.2, the emulator `make test`
// runs against, as localstack/fauxqs-server.mjs launches it. (The launcher
// corrects one more: in bare fauxqs a long poll whose client went away still
// takes the next message sent; the suite's AbortedLongPollTakesNoLaterMessage
// holds the launched emulator to real SQS's behaviour.)
func FauxqsQuirks() map[Quirk]bool {
	return map[Quirk]bool{
		QuirkNoDLQAdminActions:               true,
		QuirkDeleteAcceptsAnyReceiptHandle:   true,
		QuirkChangeVisibilityNotInflight:     true,
		QuirkLongPollWakesAllWaiters:         true,
		QuirkFIFOOneMessagePerGroup:          true,
		QuirkFifoSuffixMakesFIFO:             true,
		QuirkNoVisibilityCapFromReceipt:      true,
		QuirkMessageAttributesAlwaysReturned: true,
		QuirkPurgeNotRateLimited:             true,
		QuirkPrefixedErrorCodes:              true,
		QuirkNoRetention:                     true,
		QuirkCountsIgnoreVisibilityExpiry:    true,
		QuirkNoAWSTraceHeader:                true,
		QuirkFIFORedriveKeepsEnqueueTime:     true,
		QuirkNoStandardMessageGroupId:        true,
	}
}

// QuirksFor returns the declared quirks of a backend named as testenv names
// them ("fauxqs", "localstack", "aws"): fauxqs's set, and none for the others
// (LocalStack and real SQS are held to real SQS's behaviour; a LocalStack
// difference found later is declared here the same way).
func QuirksFor(backend string) map[Quirk]bool {
	if backend == "fauxqs" {
		return FauxqsQuirks()
	}
	return nil
}
