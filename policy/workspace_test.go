package policy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResolveWorkspace(t *testing.T) {
	dir := t.TempDir()
	real := mustEval(t, dir)
	project := filepath.Join(real, "project")
	require.NoError(t, os.Mkdir(project, 0o755))
	links := t.TempDir()
	link := func(name, target string) string {
		p := filepath.Join(links, name)
		require.NoError(t, os.Symlink(target, p))
		return p
	}
	toRoot := link("work", "/")
	toEtc := link("etc", "/etc")
	chain := link("chain", link("chain2", link("chain3", "/")))
	toProject := link("proj", project)
	file := filepath.Join(real, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	sockDir := filepath.Join(real, "engine")
	require.NoError(t, os.Mkdir(sockDir, 0o755))
	sock := "unix://" + filepath.Join(sockDir, "docker.sock")

	ok := []struct{ in, want string }{
		{project, project},
		{project + "/", project},
		{project + "/../project", project},
		{toProject, project},
		{"", ""},
	}
	for _, tt := range ok {
		got, err := ResolveWorkspace(tt.in, "")
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
	refused := []struct{ in, sock, want string }{
		{"/", "", "is /,"},
		{toRoot, "", "resolved to /"},
		{chain, "", "resolved to /"},
		{toEtc, "", "inside the system folder /etc"},
		{"/etc/ssl", "", "/etc"},
		{"/usr/lib", "", "/usr"},
		{"/proc/self", "", "/proc"},
		{"/sys", "", "/sys"},
		{"/dev", "", "/dev"},
		{"/run", "", "/run"},
		{"/var/run", "", "/run"},
		{"/var/lib/docker", "", "/var/lib/docker"},
		{"/root", "", "is /root,"},
		{"/home", "", "/home"},
		{"/tmp", "", "/tmp"},
		{"/var", "", "/var"},
		{real, sock, "Docker socket"},
		{sockDir, sock, "Docker socket"},
		{filepath.Join(real, "missing"), "", "--workspace"},
		{file, "", "not a directory"},
	}
	for _, tt := range refused {
		_, err := ResolveWorkspace(tt.in, tt.sock)
		require.ErrorIs(t, err, ErrWorkspace, tt.in)
		require.ErrorContains(t, err, tt.want, tt.in)
		require.ErrorContains(t, err, "--workspace", tt.in)
	}
}

func TestSocketPath(t *testing.T) {
	require.Equal(t, "/var/run/docker.sock", socketPath(""))
	require.Equal(t, "/var/run/docker.sock", socketPath("tcp://127.0.0.1:2375"))
	require.Equal(t, "/x/d.sock", socketPath("unix:///x/d.sock"))
}
