//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// initReport runs job in the runner image with the Docker CLI (the
// hardening that matters here: a memory limit, a private cgroup namespace)
// and returns sandbox-init's report as it is on the wire.
func initReport(t *testing.T, job frame.Job) frame.Report {
	t.Helper()
	in, err := json.Marshal(job)
	require.NoError(t, err)
	cmd := exec.Command("docker", "run", "--rm", "-i", "--network", "none", "--cgroupns", "private",
		"--memory", "64m", "--memory-swap", "64m", "--user", "65532:65532", "--read-only", "--cap-drop", "ALL",
		"--label", sandbox.LabelManaged+"=true", "--label", sandbox.LabelOwnerPID+"="+strconv.Itoa(os.Getpid()),
		runner.Image())
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", stderr.String())
	fr := frame.NewReader(bytes.NewReader(out))
	for {
		typ, p, err := fr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("no result frame; stderr: %s", stderr.String())
		}
		require.NoError(t, err)
		if typ == frame.Result {
			var rep frame.Report
			require.NoError(t, json.Unmarshal(p, &rep))
			return rep
		}
	}
}

// sandbox-init counts OOM kills in the sandbox's own memory cgroup and says
// so in its report, which lets the host answer without asking the engine.
func TestInitReportsOOMKills(t *testing.T) {
	t.Parallel()
	job := func(code string) frame.Job {
		return frame.Job{Argv: []string{"python3", "-c", code}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: "/",
			TimeoutMS: 30_000, GraceMS: 1000, OutputCap: 1 << 20}
	}
	rep := initReport(t, job(`print("fine")`))
	require.NotNil(t, rep.OOMKills, "the runner image's init reads the count")
	require.Zero(t, *rep.OOMKills)

	rep = initReport(t, job("c = []\nwhile True: c.append(b'x' * (4 << 20))"))
	require.Equal(t, 9, rep.Signal)
	require.NotNil(t, rep.OOMKills)
	require.Equal(t, int64(1), *rep.OOMKills)
}
