// Package limit is what the session store and the skill store share about
// the operator's bounds: the error that names a bound reached (its policy
// key, its value and how to get past it), and the rule that a bound left
// at zero or below takes its default. Each store keeps its own policy
// keys, defaults and sentinel error; it defines its LimitError on Error so
// that callers still tell one store's limits from the other's.
package limit
