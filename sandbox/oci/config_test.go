package oci

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func goldenSpec() sandbox.Spec {
	return sandbox.Spec{
		RunID:        "0123456789abcdef",
		Skill:        "hello",
		SkillVersion: "1.2.0",
		SkillDir:     "/home/dev/skills/hello",
		Argv:         []string{"python3", "/skills/hello/scripts/echo.py"},
		Runtime:      "python3",
		Env:          map[string]string{"GREETING": "hi"},
		Image:        "sandboxrun/runner:0.1.0",
		Limits: policy.Limits{
			Timeout:     30 * time.Second,
			MemoryBytes: 512 << 20,
			CPUs:        1,
			Pids:        256,
			OutputBytes: 10 << 20,
			TmpBytes:    64 << 20,
		},
	}
}

func goldenParams(t *testing.T) bundleParams {
	sc, err := defaultSeccomp()
	require.NoError(t, err)
	return bundleParams{
		uid: sandbox.SandboxUID, gid: sandbox.SandboxGID,
		created:   time.Date(2026, 5, 7, 12, 0, 0, 0, time.UTC),
		owner:     sandbox.Owner{PID: 4242, Start: 987654, Host: "buildhost"},
		version:   "0.1.0",
		cgroup:    cgroupParent + "/0123456789abcdef",
		hostsFile: "/var/lib/sandboxrun/oci/hosts",
		seccomp:   sc,
	}
}

var goldenCases = []struct {
	name   string
	mutate func(*sandbox.Spec, *bundleParams)
}{
	{"default", func(*sandbox.Spec, *bundleParams) {}},
	{"egress", func(s *sandbox.Spec, _ *bundleParams) {
		s.EgressSocket = "/tmp/sandboxrun-egress-0123456789abcdef-1/egress.sock"
		s.EgressCA = "/tmp/sandboxrun-egress-0123456789abcdef-1/ca.pem"
		s.Limits.Egress = &policy.Egress{Allow: []string{"api.example.com"}, MaxConnections: 256, MaxBytes: 1 << 30, IdleTimeoutSec: 60}
	}},
	{"workspace_readonly", func(s *sandbox.Spec, _ *bundleParams) { s.Workspace = "/home/dev/project" }},
	{"workspace_writable", func(s *sandbox.Spec, p *bundleParams) {
		s.Workspace, s.WorkspaceWritable = "/home/dev/project", true
		p.workspace = "/var/lib/sandboxrun/oci/bundles/sandboxrun-0123456789abcdef/ws/merged"
	}},
	{"custom_limits", func(s *sandbox.Spec, _ *bundleParams) {
		s.Limits = policy.Limits{Timeout: 2500 * time.Millisecond, MemoryBytes: 64 << 20, CPUs: 0.5,
			Pids: 32, OutputBytes: 4096, TmpBytes: 8 << 20}
	}},
}

// The golden files pin every setting of the generated config.json: a
// loosened one shows up as a diff in review. The seccomp filter is the
// engine library's (checked by TestSeccompIsTheEngineDefault) and depends
// on the kernel, so the files hold its default action and architectures,
// not its syscall list.
func TestBundleConfigGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			spec, params := goldenSpec(), goldenParams(t)
			tc.mutate(&spec, &params)
			cfg := bundleConfig(&spec, params)
			sc := *cfg.Linux.Seccomp
			sc.Syscalls = nil
			cfg.Linux.Seccomp = &sc
			got, err := json.MarshalIndent(cfg, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			path := filepath.Join("testdata", "config_"+tc.name+".golden.json")
			if *update {
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./sandbox/oci -run Golden -update")
			require.Equal(t, string(want), string(got))
		})
	}
}

// TestSeccompIsTheEngineDefault: the filter is the engine's default
// profile, blocking by default, with its syscall list.
func TestSeccompIsTheEngineDefault(t *testing.T) {
	spec := goldenSpec()
	cfg := bundleConfig(&spec, goldenParams(t))
	want, err := defaultSeccomp()
	require.NoError(t, err)
	require.Equal(t, want, cfg.Linux.Seccomp)
	require.Equal(t, specs.ActErrno, cfg.Linux.Seccomp.DefaultAction)
	require.Greater(t, len(cfg.Linux.Seccomp.Syscalls), 10)
}

// The invariants hold for every configuration, whatever a golden file
// says: a test fails when one is loosened.
func TestBundleConfigInvariants(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			spec, params := goldenSpec(), goldenParams(t)
			tc.mutate(&spec, &params)
			cfg := bundleConfig(&spec, params)
			p := cfg.Process
			require.NotZero(t, p.User.UID, "never root")
			require.NotZero(t, p.User.GID, "never group root")
			require.Empty(t, p.User.AdditionalGids)
			require.Equal(t, &specs.LinuxCapabilities{}, p.Capabilities, "every capability dropped")
			require.True(t, p.NoNewPrivileges)
			require.False(t, p.Terminal)
			require.Equal(t, []string{"PATH=" + sandbox.InitPathEnv}, p.Env, "no host environment")
			require.Equal(t, []string{sandbox.InitPath}, p.Args)
			require.True(t, cfg.Root.Readonly, "read-only root")

			var ns []specs.LinuxNamespaceType
			for _, n := range cfg.Linux.Namespaces {
				require.Empty(t, n.Path, "a new namespace, never a shared one")
				ns = append(ns, n.Type)
			}
			for _, want := range []specs.LinuxNamespaceType{specs.PIDNamespace, specs.MountNamespace,
				specs.IPCNamespace, specs.UTSNamespace, specs.CgroupNamespace, specs.NetworkNamespace} {
				require.Contains(t, ns, want)
			}
			require.NotContains(t, ns, specs.UserNamespace)

			r := cfg.Linux.Resources
			require.Equal(t, spec.Limits.MemoryBytes, *r.Memory.Limit)
			require.Equal(t, *r.Memory.Limit, *r.Memory.Swap, "memory = memory + swap")
			require.False(t, *r.Memory.DisableOOMKiller)
			require.Equal(t, spec.Limits.Pids, *r.Pids.Limit)
			require.Equal(t, int64(spec.Limits.CPUs*cpuPeriod), *r.CPU.Quota)
			require.Equal(t, []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}, r.Devices)
			require.NotNil(t, cfg.Linux.Seccomp)
			for _, m := range maskedPaths {
				require.Contains(t, cfg.Linux.MaskedPaths, m)
			}
			for _, m := range readonlyPaths {
				require.Contains(t, cfg.Linux.ReadonlyPaths, m)
			}

			var tmp bool
			for _, m := range cfg.Mounts {
				switch {
				case m.Type == "bind" && m.Destination == sandbox.WorkspaceDir && spec.WorkspaceWritable:
					require.Equal(t, params.workspace, m.Source, "a writable workspace is the bundle's capped copy, never the caller's folder")
					require.NotEqual(t, spec.Workspace, m.Source)
					require.Contains(t, m.Options, "nosuid")
				case m.Type == "bind":
					require.Contains(t, m.Options, "ro", "%s: every other bind is read-only", m.Destination)
					require.NotContains(t, m.Options, "rbind", "%s: mounts below a source stay out", m.Destination)
					require.Contains(t, m.Options, "nosuid", m.Destination)
				case m.Destination == sandbox.ScratchDir:
					tmp = true
					require.Contains(t, m.Options, "size="+itoa(spec.Limits.TmpBytes))
					require.Contains(t, m.Options, "noexec")
				case m.Destination == "/sys" || m.Destination == "/sys/fs/cgroup":
					require.Contains(t, m.Options, "ro")
				}
			}
			require.True(t, tmp, "a size-capped /tmp")
			require.Equal(t, spec.RunID, cfg.Annotations[sandbox.LabelRunID])
			require.Equal(t, "4242", cfg.Annotations[sandbox.LabelOwnerPID], "the owner, for the reaper")
		})
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestMountPoints: every destination outside the kernel's file systems is
// made in the bundle's points layer, files as files.
func TestMountPoints(t *testing.T) {
	spec := goldenSpec()
	spec.EgressSocket, spec.EgressCA, spec.Workspace = "/s/egress.sock", "/s/ca.pem", "/w"
	spec.Limits.Egress = &policy.Egress{Allow: []string{"a.example"}}
	dirs, files := mountPoints(bundleConfig(&spec, goldenParams(t)))
	slices.Sort(dirs)
	slices.Sort(files)
	require.Equal(t, []string{"/skills/hello", "/tmp", "/workspace"}, dirs)
	require.Equal(t, []string{sandbox.HostsPath, sandbox.ImageCABundle, sandbox.EgressCAPath, sandbox.EgressSocketPath}, files)
}
