package docker

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		Env:          map[string]string{"GREETING": "hi", "A_FIRST": "1"},
		Stdin:        []byte(`{"name":"x"}`),
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

// The golden files pin every security setting of the generated container:
// a loosened one shows up as a diff in review.
func TestContainerConfigGolden(t *testing.T) {
	params := runParams{
		image:     "sandboxrun/runner:0.1.0",
		user:      sandbox.IdentityFor(0, 0).User(),
		created:   time.Date(2026, 5, 7, 12, 0, 0, 0, time.UTC),
		owner:     sandbox.Owner{PID: 4242, Start: 987654, Host: "buildhost"},
		version:   "0.1.0",
		hostsFile: "/run/user/1000/sandboxrun-hosts/hosts",
	}
	tests := []struct {
		name   string
		mutate func(*sandbox.Spec, *runParams)
	}{
		{"default", func(*sandbox.Spec, *runParams) {}},
		{"network", func(s *sandbox.Spec, _ *runParams) { s.Limits.Network = true }},
		{"egress", func(s *sandbox.Spec, _ *runParams) {
			s.EgressSocket = "/tmp/sandboxrun-egress-0123456789abcdef-1/egress.sock"
			s.Limits.Egress = &policy.Egress{Allow: []string{"api.example.com"}, MaxConnections: 256, MaxBytes: 1 << 30, IdleTimeoutSec: 60}
		}},
		{"workspace_readonly", func(s *sandbox.Spec, _ *runParams) { s.Workspace = "/home/dev/project" }},
		{"workspace_writable", func(s *sandbox.Spec, p *runParams) {
			s.Workspace, s.WorkspaceWritable = "/home/dev/project", true
			p.workspaceVolume = workspaceVolumeName(s.RunID)
		}},
		{"workspace_writable_without_volume_is_read_only", func(s *sandbox.Spec, _ *runParams) {
			s.Workspace, s.WorkspaceWritable = "/home/dev/project", true
		}},
		{"usr_volume", func(_ *sandbox.Spec, p *runParams) {
			p.usr = usrMount{imageID: "sha256:" + strings.Repeat("0f", 32), volume: "sandboxrun-usrdata-0f0f0f0f0f0f-01234567"}
		}},
		{"custom_limits", func(s *sandbox.Spec, p *runParams) {
			s.Limits = policy.Limits{Timeout: 2500 * time.Millisecond, MemoryBytes: 64 << 20, CPUs: 0.5,
				Pids: 32, OutputBytes: 4096, TmpBytes: 8 << 20}
			p.user = sandbox.IdentityFor(1000, 1000).User()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, p := goldenSpec(), params
			tt.mutate(&spec, &p)
			cfg, hc := containerConfig(&spec, p)
			job := sandbox.JobFor(&spec, p.version, 2*time.Second)
			got, err := json.MarshalIndent(map[string]any{
				"name":        containerName(spec.RunID),
				"config":      cfg,
				"host_config": hc,
				"job":         job,
			}, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			path := filepath.Join("testdata", tt.name+".golden.json")
			if *update {
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./sandbox/docker -run Golden -update to create it")
			require.Equal(t, string(want), string(got))
		})
	}
}

// Independently of the golden files, the settings the product promises.
func TestContainerConfigInvariants(t *testing.T) {
	for _, network := range []bool{false, true} {
		spec := goldenSpec()
		spec.Limits.Network = network
		spec.Workspace = "/w"
		cfg, hc := containerConfig(&spec, runParams{user: "65532:65532", image: "img", hostsFile: "/h/hosts"})
		require.Equal(t, []string{"PATH=" + sandbox.InitPathEnv}, cfg.Env, "no host or caller env on init")
		require.Equal(t, []string{sandbox.InitPath}, []string(cfg.Entrypoint))
		require.Empty(t, cfg.Cmd)
		require.True(t, cfg.OpenStdin && cfg.StdinOnce && cfg.AttachStdin)
		require.False(t, cfg.Tty)
		require.NotContains(t, []string{"0", "0:0", "root", ""}, cfg.User)
		require.Equal(t, []string{"ALL"}, []string(hc.CapDrop))
		require.Empty(t, hc.CapAdd)
		require.Equal(t, []string{"no-new-privileges"}, hc.SecurityOpt)
		require.True(t, hc.ReadonlyRootfs)
		require.False(t, hc.Privileged)
		require.False(t, hc.AutoRemove)
		require.Equal(t, "none", hc.LogConfig.Type)
		require.Equal(t, hc.Memory, hc.MemorySwap)
		require.Equal(t, spec.Limits.Pids, *hc.PidsLimit)
		require.False(t, *hc.OomKillDisable)
		require.False(t, *hc.Init)
		require.Empty(t, hc.Devices)
		require.Empty(t, hc.Binds)
		if network {
			require.Equal(t, "bridge", string(hc.NetworkMode))
		} else {
			require.Equal(t, "none", string(hc.NetworkMode))
		}
		for _, m := range hc.Mounts {
			require.True(t, m.ReadOnly, "%s: skill, hosts file and a workspace that is not writable are read-only", m.Target)
		}
		require.Equal(t, sandbox.SkillMount(spec.Skill), hc.Mounts[0].Target)
		if network {
			require.Len(t, hc.Mounts, 2, "with a network the engine writes /etc/hosts")
		} else {
			require.Len(t, hc.Mounts, 3)
			require.Equal(t, sandbox.HostsPath, hc.Mounts[1].Target)
			require.Equal(t, "/h/hosts", hc.Mounts[1].Source, "sandboxrun's own file, never the host's /etc/hosts")
			require.True(t, hc.Mounts[1].BindOptions.NonRecursive)
		}
		require.Equal(t, sandbox.WorkspaceDir, hc.Mounts[len(hc.Mounts)-1].Target)
		require.Equal(t, sandbox.Hostname, cfg.Hostname)
		require.Equal(t, !network, cfg.NetworkDisabled, "localhost needs no network")
		require.Empty(t, hc.ExtraHosts)
		require.Equal(t, "true", cfg.Labels[sandbox.LabelManaged])
		tmpOpts := strings.Split(hc.Tmpfs[sandbox.ScratchDir], ",")
		for _, o := range []string{"noexec", "nosuid", "nodev"} {
			require.Contains(t, tmpOpts, o, "/tmp is %s, explicitly: engines differ in defaults", o)
		}
	}
}

func TestContainerConfigOCIRuntime(t *testing.T) {
	spec := goldenSpec()
	_, hc := containerConfig(&spec, runParams{user: "65532:65532", image: "img"})
	require.Empty(t, hc.Runtime, "the engine's default runtime unless one is chosen")
	_, hc = containerConfig(&spec, runParams{user: "65532:65532", image: "img", ociRuntime: "runsc"})
	require.Equal(t, "runsc", hc.Runtime)
	require.Equal(t, []string{"ALL"}, []string(hc.CapDrop), "a runtime choice loosens nothing else")
	require.True(t, hc.ReadonlyRootfs)
}
