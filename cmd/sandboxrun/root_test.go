package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
)

func TestUsageErrors(t *testing.T) {
	isolateEnv(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`},
		{"unknown flag", []string{"--bogus"}, "unknown flag: --bogus"},
		{"unknown flag on a command", []string{"run", "--bogus", "hello", "scripts/echo.py"}, "unknown flag: --bogus; see 'sandboxrun run --help'"},
		{"unknown shorthand", []string{"list", "-z"}, "unknown shorthand flag: 'z'"},
		{"flag without value", []string{"list", "--format"}, "flag needs an argument"},
		{"bad flag value", []string{"run", "--cpus", "many", "hello", "scripts/echo.py"}, `"many"`},
		{"run without arguments", []string{"run"}, "SKILL and SCRIPT"},
		{"run with one argument", []string{"run", "hello"}, "run takes SKILL and SCRIPT (got 1)"},
		{"run with three arguments", []string{"run", "a", "b", "c"}, "SKILL and SCRIPT"},
		{"python without skill", []string{"python", "--code", "print(1)"}, "one SKILL"},
		{"reap with an argument", []string{"reap", "x"}, "no arguments"},
		{"images build with an argument", []string{"images", "build", "x"}, "no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "", tt.args...)
			r.requireCode(t, exitRefused)
			require.Empty(t, r.stdout)
			require.True(t, strings.HasPrefix(r.stderr, "sandboxrun: "), r.stderr)
			require.Contains(t, r.stderr, tt.want)
			require.Equal(t, 1, strings.Count(r.stderr, "--help"), "one pointer to the help, not two: %q", r.stderr)
		})
	}
}

// commandPaths lists every command of the tree, e.g. "images build".
func commandPaths(c *cobra.Command) [][]string {
	var out [][]string
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		out = append(out, []string{sub.Name()})
		for _, p := range commandPaths(sub) {
			out = append(out, append([]string{sub.Name()}, p...))
		}
	}
	return out
}

func TestHelpOnEveryCommand(t *testing.T) {
	isolateEnv(t)
	paths := commandPaths(newRootCmd(&globals{}, streams{}))
	require.GreaterOrEqual(t, len(paths), 9, "validate list show run exec python reap images images/build")
	paths = append(paths, nil) // the root itself

	for _, p := range paths {
		for _, flag := range []string{"--help", "-h"} {
			t.Run(strings.Join(append(p, flag), " "), func(t *testing.T) {
				r := cli(t, "", append(append([]string{}, p...), flag)...)
				r.requireCode(t, exitOK)
				require.Contains(t, r.stdout, "Usage:")
				require.Contains(t, r.stdout, "sandboxrun "+strings.Join(p, " "))
				require.NotContains(t, r.stdout, "] [flags]", "the Use line already lists the flags")
				require.Empty(t, r.stderr)
			})
		}
	}

	t.Run("help command", func(t *testing.T) {
		r := cli(t, "", "help", "run")
		r.requireCode(t, exitOK)
		require.Contains(t, r.stdout, "Usage:")
		require.Contains(t, r.stdout, "--args-file")
	})
}

// TestJSONFlagSaysWhatItPrints keeps each command's --json description
// about that command's own output.
func TestJSONFlagSaysWhatItPrints(t *testing.T) {
	isolateEnv(t)
	tests := []struct {
		cmd, want string
	}{
		{"run", "print the Result as JSON"},
		{"exec", "with --dry-run: the decision"},
		{"python", "{skill_name, stdout, stderr, returncode, timed_out, error}"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			r := cli(t, "", tt.cmd, "--help")
			r.requireCode(t, exitOK)
			require.Contains(t, r.stdout, tt.want)
		})
	}
}

func TestVersion(t *testing.T) {
	r := cli(t, "", "--version")
	r.requireCode(t, exitOK)
	require.Contains(t, r.stdout, sandboxrun.Version)
}
