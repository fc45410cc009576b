package images

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRunReportsExitCodeAndStderrTail(t *testing.T) {
	var stdout, progress strings.Builder
	err := run(context.Background(), cmdSpec{
		name:   "sh",
		args:   []string{"-c", `echo out; echo "$SBX_TEST_VAR" >&2; echo last words >&2; exit 3`},
		env:    []string{"SBX_TEST_VAR=from env"},
		stdout: &stdout,
		stderr: &progress,
	})
	var cmdErr *CommandError
	require.ErrorAs(t, err, &cmdErr)
	require.Equal(t, 3, cmdErr.ExitCode)
	require.Equal(t, "from env\nlast words\n", cmdErr.StderrTail)
	require.Equal(t, "from env\nlast words\n", progress.String())
	require.Equal(t, "out\n", stdout.String())
	require.Contains(t, err.Error(), "from env | last words")
}

func TestRunCancelKillsTheProcessGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	// The child sleeps in a grandchild; only signalling the whole group
	// ends it promptly.
	err := run(ctx, cmdSpec{name: "sh", args: []string{"-c", "sleep 30 & wait"}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestRunMissingProgram(t *testing.T) {
	err := run(context.Background(), cmdSpec{name: "sandboxrun-no-such-program"})
	var cmdErr *CommandError
	require.ErrorAs(t, err, &cmdErr)
	require.Equal(t, -1, cmdErr.ExitCode)
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 5}
	_, _ = tb.Write([]byte("abc"))
	_, _ = tb.Write([]byte("defg"))
	require.Equal(t, "cdefg", tb.String())
}
