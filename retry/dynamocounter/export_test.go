package dynamocounter

// The attribute names and the default TTL, for the tests.
const (
	KeyAttribute   = keyAttribute
	CountAttribute = countAttribute
	TTLAttribute   = ttlAttribute
	DefaultTTL     = defaultTTL
)
