package console

import (
	"context"

	"github.com/sqsworker/sqsworker/internal/deadletter"
)

// queueAttrs reads the named attributes of the queue at url. It is the one
// place the history sampler and the retention check call SQS (one
// GetQueueAttributes), so that the call can follow the library's retry
// rule in one edit.
func (h *handler) queueAttrs(ctx context.Context, url string, names ...string) (map[string]string, error) {
	return deadletter.GetAttributes(ctx, h.client, url, names...)
}
