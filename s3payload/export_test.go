package s3payload

// Test-only access to the wire format's parser and writer.

// ParsePointer is parsePointer.
func ParsePointer(body string) (Pointer, error) { return parsePointer(body) }

// ErrNotPointer is errNotPointer.
var ErrNotPointer = errNotPointer

// Body is the pointer's message body.
func (p Pointer) Body() string { return p.body() }
