package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
)

// Sentinels for caller-supplied environment variables.
var (
	ErrReservedEnv = errors.New("reserved environment variable")
	ErrInvalidEnv  = errors.New("invalid environment variable")
	// ErrCodeLoadingEnv refuses variables that make a program in the
	// sandbox load or run other code (see CodeLoadingEnv).
	ErrCodeLoadingEnv = errors.New("environment variable that loads code")
)

// ReservedEnv lists the variables sandboxrun sets for every execution, which
// callers may not override. It is informational: CheckEnv uses its own copy,
// so changing this slice does not change the rule.
var ReservedEnv = slices.Clone(reservedEnv)

var reservedEnv = []string{
	"SKILL_NAME", "SKILL_VERSION", "SKILL_BASE_DIR", "SKILL_DIR", "SCRIPTS_DIR",
	"SANDBOXRUN_VERSION", "SANDBOXRUN_RUN_ID", "PATH", "HOME", "LANG",
}

// reservedEnvPrefix keeps the whole SANDBOXRUN_ namespace for sandboxrun, so
// a variable added later cannot already be in use by callers.
const reservedEnvPrefix = "SANDBOXRUN_"

// IsReservedEnv reports whether callers may not set name.
func IsReservedEnv(name string) bool {
	return slices.Contains(reservedEnv, name) || strings.HasPrefix(name, reservedEnvPrefix)
}

// CheckEnv checks caller-supplied variables: names must match
// [A-Za-z_][A-Za-z0-9_]*, values may not hold NUL bytes (they cannot cross
// exec), and reserved names are refused. All problems are reported, in name
// order.
func CheckEnv(env map[string]string) error {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	slices.Sort(names)
	var errs []error
	for _, name := range names {
		switch {
		case !validEnvName(name):
			errs = append(errs, fmt.Errorf("%w: name %q must be letters, digits and '_' and not start with a digit, e.g. MY_VAR", ErrInvalidEnv, name))
		case codeLoadingReason(name) != "":
			errs = append(errs, fmt.Errorf("%w: %s %s, so a caller could run code the policy never checked; pass the value as an argument or in the JSON arguments instead", ErrCodeLoadingEnv, name, codeLoadingReason(name)))
		case IsReservedEnv(name):
			errs = append(errs, fmt.Errorf("%w: %s is set by sandboxrun for every execution; use another name (reserved: %s and %s*)", ErrReservedEnv, name, strings.Join(reservedEnv, ", "), reservedEnvPrefix))
		case strings.IndexByte(env[name], 0) >= 0:
			errs = append(errs, fmt.Errorf("%w: the value of %s contains a NUL byte, which cannot be passed to a program; remove it", ErrInvalidEnv, name))
		}
	}
	return errors.Join(errs...)
}

func validEnvName(s string) bool { return bashcheck.ShellName(s) }
