package producer

// QueueURL returns the URL of the queue p sends to (the ARN of its topic),
// for the tests of New's name resolution.
func QueueURL(p *Producer) string { return p.target }
