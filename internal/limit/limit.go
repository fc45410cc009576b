package limit

import "fmt"

// Error reports a bound that was reached. A store defines its own error
// type on it (type LimitError limit.Error), which keeps these fields and
// this message and adds the match with the store's sentinel.
type Error struct {
	// Limit is the operator policy key of the bound, e.g. "sessions.quota".
	Limit string
	// Value is the bound's value (bytes, count, depth or nanoseconds).
	Value int64
	// Hint says how to get past it: the policy key or flag to raise, or
	// what to remove.
	Hint string
}

// Error names the limit, its value and the hint.
func (e *Error) Error() string {
	return fmt.Sprintf("limit reached: %s (%d): %s", e.Limit, e.Value, e.Hint)
}

// Or returns v, or def when v is zero or negative: a bound the operator
// left unset (or set to nothing sensible) takes its default.
func Or[T ~int | ~int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
