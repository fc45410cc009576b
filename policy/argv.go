package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds on a script's command-line arguments (docs/policy.md, "Limits and
// where they come from"). The kernel refuses a single argument of 128 KiB or more
// (MAX_ARG_STRLEN, counting the NUL) and the whole argv plus environment
// beyond a quarter of the stack limit; sandboxrun refuses well before either,
// so the error names the fix instead of exec failing inside the sandbox.
const (
	MaxArgvBytes   = 256 << 10
	MaxArgvCount   = 4096
	MaxArgBytes    = 128<<10 - 1
	argvFixMessage = "pass large input as a file in the workspace and its path as the argument"
)

// ErrBadArgv is wrapped by every refusal of CheckArgv.
var ErrBadArgv = errors.New("invalid script arguments")

// CheckArgv checks the command-line arguments a caller passes to a script.
// They reach the program exactly as given, one argv entry each, never through
// a shell; so the only rules are what an argv entry can carry: no NUL byte,
// valid UTF-8 (the job reaches sandbox-init as JSON, which would replace
// invalid bytes), and the size bounds above.
func CheckArgv(argv []string) error {
	if len(argv) > MaxArgvCount {
		return fmt.Errorf("%w: %d arguments, over the limit of %d; %s", ErrBadArgv, len(argv), MaxArgvCount, argvFixMessage)
	}
	total := 0
	for i, a := range argv {
		switch {
		case strings.IndexByte(a, 0) >= 0:
			return fmt.Errorf("%w: argument %d contains a NUL byte, which no program can receive; remove it", ErrBadArgv, i+1)
		case !utf8.ValidString(a):
			return fmt.Errorf("%w: argument %d is not valid UTF-8; pass text (or the data in a workspace file)", ErrBadArgv, i+1)
		case len(a) > MaxArgBytes:
			return fmt.Errorf("%w: argument %d is %d bytes, over the %d-byte limit of one argument; %s", ErrBadArgv, i+1, len(a), MaxArgBytes, argvFixMessage)
		}
		total += len(a) + 1
	}
	if total > MaxArgvBytes {
		return fmt.Errorf("%w: the arguments take %d bytes, over the %d KiB limit; %s", ErrBadArgv, total, MaxArgvBytes>>10, argvFixMessage)
	}
	return nil
}
