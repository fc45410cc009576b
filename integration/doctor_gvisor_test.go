//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/doctor"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

// requireRunsc stops the test unless the engine has runsc registered.
// SANDBOXRUN_TEST_RUNSC=1 (set by `make test-runsc`, after `make runsc`)
// says gVisor is expected: then an engine without it fails the test
// instead of skipping it.
func requireRunsc(t *testing.T) {
	t.Helper()
	info, err := runner.Client().Info(t.Context())
	require.NoError(t, err)
	if _, ok := info.Runtimes["runsc"]; ok {
		return
	}
	if os.Getenv("SANDBOXRUN_TEST_RUNSC") == "1" {
		t.Fatalf("SANDBOXRUN_TEST_RUNSC=1 but the engine has no runsc runtime (it has %v): run `make runsc`", keys(info.Runtimes))
	}
	t.Skip("the engine has no runsc runtime; `make test-runsc` installs gVisor, registers it and runs this")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// runDoctorGVisor checks the setup under runsc, through a runner whose
// probe container change alters (nil: none).
func runDoctorGVisor(t *testing.T, pol *policy.Operator, ociRuntime string, change func(*container.Config, *container.HostConfig)) *doctor.Report {
	t.Helper()
	o := doctor.Options{Policy: pol, OCIRuntime: ociRuntime, TempDir: t.TempDir()}
	if change != nil {
		c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		d, err := docker.New(docker.WithClient(breaker{c, change}), docker.WithVersion(sandboxrun.Version),
			docker.WithDefaultImage(sandboxrun.RunnerImage()), docker.WithOCIRuntime("runsc"), warnings())
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		o.Engine = d
	}
	rep, err := doctor.Run(t.Context(), o)
	require.NoError(t, err)
	return rep
}

// requireGVisorReport: nothing fails, the runtime is seen as gVisor, and
// exactly the lines gVisor cannot show warn, each saying why.
func requireGVisorReport(t *testing.T, rep *doctor.Report) {
	t.Helper()
	require.False(t, rep.IsolationFailed(), "%+v", rep.Checks)
	require.False(t, rep.Unchecked(), "%+v", rep.Checks)
	warned := map[string]bool{}
	isolation := 0
	for _, c := range rep.Checks {
		require.NotEqual(t, doctor.Fail, c.Status, "%s: %s", c.Name, c.Reason)
		if c.Area != doctor.AreaIsolation {
			continue
		}
		isolation++
		if c.Status == doctor.Warn {
			warned[c.Name] = true
			require.Contains(t, c.Reason, "gVisor", c.Name)
			require.NotEmpty(t, c.Fix, c.Name)
		}
	}
	require.Equal(t, 17, isolation)
	require.Equal(t, map[string]bool{"seccomp": true, "memory": true, "cpu": true, "pids": true}, warned)
	require.Contains(t, checkOf(t, rep, "runtime").Reason, "gVisor")
	require.Contains(t, checkOf(t, rep, "no_new_privs").Reason, "prctl")
	require.Contains(t, checkOf(t, rep, "interfaces").Reason, "only lo")
	require.Contains(t, checkOf(t, rep, "memory").Reason, "MemTotal is 512MiB", "the built-in policy's memory default")
	require.Contains(t, checkOf(t, rep, "runtimes").Reason, "runs use runsc")
}

// The doctor under gVisor, asked for by flag (as --oci-runtime) and by a
// policy's runtime: runsc.
func TestDoctorUnderGVisor(t *testing.T) {
	t.Parallel()
	requireRunsc(t)
	t.Run("oci runtime", func(t *testing.T) {
		t.Parallel()
		requireGVisorReport(t, runDoctorGVisor(t, nil, "runsc", nil))
	})
	t.Run("policy runtime", func(t *testing.T) {
		t.Parallel()
		pol, err := policy.ParsePolicy("doctor-gvisor.yaml", []byte("runtime: runsc\n"))
		require.NoError(t, err)
		requireGVisorReport(t, runDoctorGVisor(t, pol, "", nil))
	})
}

// What gVisor does show still fails when it is broken on purpose.
func TestDoctorUnderGVisorFailsBrokenProperties(t *testing.T) {
	t.Parallel()
	requireRunsc(t)
	for _, tc := range []struct {
		name   string
		checks []string
		also   []string
		change func(*container.Config, *container.HostConfig)
	}{
		{"root user", []string{"user"}, []string{"workspace"}, func(c *container.Config, _ *container.HostConfig) { c.User = "0:0" }},
		// Not NET_RAW, as the runc case adds: runsc without --net-raw
		// strips it from every container, so the probe rightly sees none.
		{"a capability", []string{"capabilities"}, nil, func(_ *container.Config, hc *container.HostConfig) { hc.CapAdd = []string{"CHOWN"} }},
		{"writable root", []string{"rootfs_read_only"}, nil, func(_ *container.Config, hc *container.HostConfig) { hc.ReadonlyRootfs = false }},
		{"memory", []string{"memory"}, nil, func(_ *container.Config, hc *container.HostConfig) {
			hc.Memory, hc.MemorySwap = 2*hc.Memory, 2*hc.MemorySwap
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := runDoctorGVisor(t, nil, "runsc", tc.change)
			require.True(t, rep.IsolationFailed(), "%+v", rep.Checks)
			for _, name := range tc.checks {
				c := checkOf(t, rep, name)
				require.Equal(t, doctor.Fail, c.Status, "%s: %s", name, c.Reason)
				require.NotEmpty(t, c.Fix)
			}
			for _, c := range rep.Checks {
				if c.Area == doctor.AreaIsolation && c.Status == doctor.Fail {
					require.Contains(t, append(tc.checks, tc.also...), c.Name, "only the broken property fails, not %s: %s", c.Name, c.Reason)
				}
			}
		})
	}
}

// The command under gVisor: exit 0, the gVisor lines, and --json.
func TestDoctorCLIUnderGVisor(t *testing.T) {
	t.Parallel()
	requireRunsc(t)
	dir := t.TempDir()
	r := cli(t, dir, nil, "", "doctor", "--oci-runtime", "runsc")
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "PASS  isolation  runtime           gVisor")
	require.Contains(t, r.stdout, "WARN  isolation  seccomp           gVisor reports Seccomp 0")
	require.Regexp(t, `28 checks \(backend docker\): \d+ pass, \d+ warn, 0 fail, 0 not checked`, r.stdout)

	pol := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("runtime: runsc\n"), 0o600))
	r = cli(t, dir, nil, "", "--policy", pol, "doctor", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep doctor.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	requireGVisorReport(t, &rep)
}
