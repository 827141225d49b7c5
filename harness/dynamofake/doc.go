// Package dynamofake is an in-memory DynamoDB table, with the SDK's exact
// method signatures, for the tests of the packages that keep records in
// DynamoDB (idempotency, unique). It evaluates the condition and update
// expressions it is given rather than mirroring a caller's logic, so a test
// checks what the requests say; the integration tests run the same
// scenarios against DynamoDB Local.
//
// What it models: one table with a string partition key (its name set by
// [New]); PutItem (ReturnValues ALL_OLD), UpdateItem (ReturnValues ALL_NEW;
// an absent item is created from the key), DeleteItem (ReturnValues
// ALL_OLD) and DescribeTable (always ACTIVE, with the partition key);
// condition expressions made of comparisons (=, <>, <, <=, >) of a #name
// with a :value (strings, and integer numbers), attribute_not_exists, AND,
// OR and parentheses, a comparison with an absent attribute being false;
// update expressions made of SET #a = :v and REMOVE #b clauses; a failed
// condition as ConditionalCheckFailedException, carrying the old item when
// ReturnValuesOnConditionCheckFailure is ALL_OLD; an expression outside the
// grammar as a ValidationException. Faults are scripted per call with
// [Table.Fail] (the call fails before it takes effect) and [Table.Lose]
// (the call takes effect and its answer is an error); every call is counted
// ([Table.Count]).
//
// What it does not model: sort keys, secondary indexes, Query, Scan,
// GetItem, batch and transactional calls, table management (CreateTable,
// TTL: a test's adapter embeds the package's API interface to satisfy it,
// and calling one of those panics), attribute_exists, begins_with and the
// other functions, NOT, BETWEEN and IN, arithmetic and list operations in
// updates (SET #a = #a + :n, list_append, ADD, DELETE), document paths,
// projection expressions, ReturnValues other than the ones above, item size
// and throughput limits, throttling, TTL expiry, and consistency: every
// call is strongly consistent and calls are serialized.
package dynamofake
