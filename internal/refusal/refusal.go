package refusal

import "errors"

// Err is what every refusal matches.
var Err = errors.New("refused")

// Mark marks err as a refusal without changing its message.
func Mark(err error) error { return &refusedError{err: err} }

type refusedError struct{ err error }

func (e *refusedError) Error() string        { return e.err.Error() }
func (e *refusedError) Unwrap() error        { return e.err }
func (e *refusedError) Is(target error) bool { return target == Err }
