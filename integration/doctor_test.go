//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/doctor"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

// probeSkill is the doctor's probe skill, whose containers the breaker
// changes (the engine's usr fill containers are left alone).
const probeSkill = "sandboxrun-doctor"

// breaker is the engine client with one change to the probe's container,
// made on purpose: the test-only path to a sandbox missing one property.
type breaker struct {
	*client.Client
	change func(*container.Config, *container.HostConfig)
}

func (b breaker) ContainerCreate(ctx context.Context, cfg *container.Config, hc *container.HostConfig,
	nc *network.NetworkingConfig, p *ocispec.Platform, name string) (container.CreateResponse, error) {
	if cfg.Labels[sandbox.LabelSkill] == probeSkill {
		b.change(cfg, hc)
	}
	return b.Client.ContainerCreate(ctx, cfg, hc, nc, p, name)
}

// runDoctor checks a setup whose probe container change alters (nil:
// none) and returns the report.
func runDoctor(t *testing.T, pol *policy.Operator, change func(*container.Config, *container.HostConfig)) *doctor.Report {
	t.Helper()
	o := doctor.Options{Policy: pol, TempDir: t.TempDir()}
	if change != nil {
		c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		d, err := docker.New(docker.WithClient(breaker{c, change}), docker.WithVersion(sandboxrun.Version),
			docker.WithDefaultImage(sandboxrun.RunnerImage()), warnings())
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		o.Engine = d
	}
	rep, err := doctor.Run(t.Context(), o)
	require.NoError(t, err)
	return rep
}

func checkOf(t *testing.T, rep *doctor.Report, name string) doctor.Check {
	t.Helper()
	i := slices.IndexFunc(rep.Checks, func(c doctor.Check) bool { return c.Name == name })
	require.GreaterOrEqual(t, i, 0, "no check %q in %+v", name, rep.Checks)
	return rep.Checks[i]
}

// On this engine, as built, nothing fails and every isolation line passes.
func TestDoctorPassesOnACorrectSetup(t *testing.T) {
	t.Parallel()
	rep := runDoctor(t, nil, nil)
	require.False(t, rep.IsolationFailed(), "%+v", rep.Checks)
	require.False(t, rep.Unchecked(), "%+v", rep.Checks)
	isolation := 0
	for _, c := range rep.Checks {
		require.NotEqual(t, doctor.Fail, c.Status, "%s: %s", c.Name, c.Reason)
		if c.Area == doctor.AreaIsolation {
			isolation++
			require.Equal(t, doctor.Pass, c.Status, "%s: %s", c.Name, c.Reason)
		}
	}
	require.Equal(t, 17, isolation)
	require.Contains(t, checkOf(t, rep, "workspace").Reason, "writable", "the built-in policy lets a skill that declares Write write")
}

// A policy that keeps workspaces read-only: the probe's workspace must be.
func TestDoctorReadOnlyWorkspacePolicy(t *testing.T) {
	t.Parallel()
	pol, err := policy.ParsePolicy("doctor-test.yaml", []byte("workspace:\n  write: read-only\nnetwork: none\n"))
	require.NoError(t, err)
	rep := runDoctor(t, pol, nil)
	require.False(t, rep.IsolationFailed(), "%+v", rep.Checks)
	require.Contains(t, checkOf(t, rep, "workspace").Reason, "read-only")
}

// Each property broken on purpose fails its own line (and the run exits 1
// for it, which the CLI test below shows for the whole command).
func TestDoctorFailsEachBrokenProperty(t *testing.T) {
	t.Parallel()
	// A read-only workspace is a bind mount a change can open; a writable
	// one is a volume the engine fills, which refuses to be made read-only.
	readOnly, err := policy.ParsePolicy("doctor-test.yaml", []byte("workspace:\n  write: read-only\n"))
	require.NoError(t, err)
	// A kernel without /proc/kcore (this machine's) cannot show it open.
	var kcore []string
	if _, err := os.Stat("/proc/kcore"); err == nil {
		kcore = []string{"proc_kcore"}
	}
	mountAt := func(hc *container.HostConfig, target string) *mount.Mount {
		for i := range hc.Mounts {
			if hc.Mounts[i].Target == target {
				return &hc.Mounts[i]
			}
		}
		t.Fatalf("no mount at %s in %+v", target, hc.Mounts)
		return nil
	}
	for _, tc := range []struct {
		name   string
		checks []string
		// also may fail with them: what the change breaks besides
		also   []string
		change func(*container.Config, *container.HostConfig)
	}{
		{"root user", []string{"user"}, []string{"workspace"}, func(c *container.Config, _ *container.HostConfig) { c.User = "0:0" }},
		{"a capability", []string{"capabilities"}, nil, func(_ *container.Config, hc *container.HostConfig) { hc.CapAdd = []string{"NET_RAW"} }},
		{"no no-new-privileges", []string{"no_new_privs"}, nil, func(_ *container.Config, hc *container.HostConfig) { hc.SecurityOpt = nil }},
		{"seccomp unconfined", []string{"seccomp"}, nil, func(_ *container.Config, hc *container.HostConfig) {
			hc.SecurityOpt = append(hc.SecurityOpt, "seccomp=unconfined")
		}},
		{"a network", []string{"interfaces"}, []string{"dns"}, func(c *container.Config, hc *container.HostConfig) {
			c.NetworkDisabled, hc.NetworkMode = false, "bridge"
		}},
		{"writable root", []string{"rootfs_read_only"}, nil, func(_ *container.Config, hc *container.HostConfig) { hc.ReadonlyRootfs = false }},
		{"writable skill", []string{"skills_read_only"}, nil, func(_ *container.Config, hc *container.HostConfig) {
			mountAt(hc, sandbox.SkillMount(probeSkill)).ReadOnly = false
		}},
		{"writable workspace", []string{"workspace"}, nil, func(_ *container.Config, hc *container.HostConfig) {
			mountAt(hc, sandbox.WorkspaceDir).ReadOnly = false
		}},
		{"engine socket", []string{"engine_socket"}, nil, func(_ *container.Config, hc *container.HostConfig) {
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: "/var/run/docker.sock", Target: "/var/run/docker.sock", ReadOnly: true})
		}},
		{"system paths open to root", append([]string{"proc_sys", "sys_firmware"}, kcore...), []string{"user", "capabilities", "workspace"},
			func(c *container.Config, hc *container.HostConfig) {
				c.User, hc.CapAdd = "0:0", []string{"SYS_RAWIO"}
				hc.MaskedPaths, hc.ReadonlyPaths = []string{}, []string{}
			}},
		{"memory", []string{"memory"}, nil, func(_ *container.Config, hc *container.HostConfig) {
			hc.Memory, hc.MemorySwap = 2*hc.Memory, 2*hc.MemorySwap
		}},
		{"swap", []string{"memory"}, nil, func(_ *container.Config, hc *container.HostConfig) { hc.MemorySwap = 2 * hc.Memory }},
		{"cpu", []string{"cpu"}, nil, func(_ *container.Config, hc *container.HostConfig) { hc.NanoCPUs = 0 }},
		{"pids", []string{"pids"}, nil, func(_ *container.Config, hc *container.HostConfig) { hc.PidsLimit = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := runDoctor(t, readOnly, tc.change)
			require.True(t, rep.IsolationFailed(), "%+v", rep.Checks)
			for _, name := range tc.checks {
				c := checkOf(t, rep, name)
				require.Equal(t, doctor.Fail, c.Status, "%s: %s", name, c.Reason)
				require.NotEmpty(t, c.Fix)
			}
			for _, c := range rep.Checks {
				if c.Area == doctor.AreaIsolation && !slices.Contains(tc.checks, c.Name) && !slices.Contains(tc.also, c.Name) {
					require.NotEqual(t, doctor.Fail, c.Status, "only the broken property fails, not %s: %s", c.Name, c.Reason)
				}
			}
		})
	}
}

// The command: a report on stdout, exit 0 on this engine; --json parses;
// an engine that cannot be reached exits 3 with the line that says so.
func TestDoctorCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := cli(t, dir, nil, "", "doctor")
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "PASS  isolation  capabilities")
	require.Regexp(t, `\d+ checks \(backend docker\): \d+ pass, \d+ warn, 0 fail, 0 not checked`, r.stdout)

	r = cli(t, dir, nil, "", "doctor", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep doctor.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, "docker", rep.Backend)
	require.NotEmpty(t, rep.Checks)

	r = cli(t, dir, []string{"DOCKER_HOST=unix://" + dir + "/no-engine.sock"}, "", "doctor")
	require.Equal(t, 3, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "SKIP  host  engine")
	require.True(t, strings.Contains(r.stdout, "not checked"))
}
