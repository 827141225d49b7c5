package fleet

import "github.com/sqsworker/sqsworker/worker"

// ByGroup keys a RateLimit or Cap by the message's MessageGroupId: the
// tenant of an SQS fair queue (a standard queue whose producers set
// MessageGroupId, as producer.Message.GroupID does), or the group of a
// FIFO queue. Messages without one share the key "".
func ByGroup(m *worker.Message) string { return m.GroupID }

// ByAttribute returns a key function that keys a RateLimit or Cap by the
// string value of the message attribute name (the tenant as the sender
// set it). Messages without it share the key "".
func ByAttribute(name string) func(m *worker.Message) string {
	return func(m *worker.Message) string {
		if v, ok := m.MessageAttributes[name]; ok && v.StringValue != nil {
			return *v.StringValue
		}
		return ""
	}
}
