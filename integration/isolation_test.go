//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Interfaces are inspected, never used: no test sends traffic anywhere
// but loopback. That only lo exists without a network is
// sandboxtest.NoNetwork, run on every backend.
func TestNetwork(t *testing.T) {
	t.Parallel()
	code := `import json, os; print(json.dumps(sorted(os.listdir("/sys/class/net"))))`
	// Without a network the engine skips its own network setup
	// (NetworkDisabled): the runtime must still give the sandbox a network
	// namespace of its own, never the host's, with a working loopback (the
	// egress relay listens there).
	t.Run("a namespace of its own with loopback up", func(t *testing.T) {
		res := run(t, pySpec(t, `
import json, os, socket
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
cli = socket.create_connection(srv.getsockname(), timeout=5)
conn, _ = srv.accept()
cli.sendall(b"ping")
print(json.dumps({
    "netns": os.readlink("/proc/self/ns/net"),
    "lo_flags": int(open("/sys/class/net/lo/flags").read(), 16),
    "echo": conn.recv(4).decode(),
}))
`))
		require.True(t, res.Success, "stderr: %s", res.Stderr)
		var got struct {
			NetNS   string `json:"netns"`
			LoFlags int    `json:"lo_flags"`
			Echo    string `json:"echo"`
		}
		require.NoError(t, json.Unmarshal(res.Output, &got))
		host, err := os.Readlink("/proc/self/ns/net")
		require.NoError(t, err)
		require.NotEqual(t, host, got.NetNS, "the sandbox must not share the host's network namespace")
		require.NotZero(t, got.LoFlags&unix.IFF_UP, "lo is up")
		require.Equal(t, "ping", got.Echo, "loopback carries traffic inside the sandbox")
	})
	// That localhost resolves and connects is sandboxtest.Localhost; here,
	// what Docker's sandbox has exactly: sandboxrun's hosts file, read-only
	// by the mount and not only by its mode, and the fixed host name on
	// loopback.
	t.Run("hosts file without network", func(t *testing.T) {
		res := run(t, pySpec(t, `
import json, socket
mount = [l.split() for l in open("/proc/self/mountinfo") if l.split()[4] == "/etc/hosts"]
print(json.dumps({
    "hosts": open("/etc/hosts").read(),
    "hostname": socket.gethostname(),
    "address": socket.gethostbyname(socket.gethostname()),
    "options": mount[0][5].split(",") if mount else [],
}))
`))
		require.True(t, res.Success, "stderr: %s", res.Stderr)
		var got struct {
			Hosts    string   `json:"hosts"`
			Hostname string   `json:"hostname"`
			Address  string   `json:"address"`
			Options  []string `json:"options"`
		}
		require.NoError(t, json.Unmarshal(res.Output, &got))
		require.Equal(t, sandbox.Hosts, got.Hosts, "sandboxrun's file, nothing of the host's")
		require.Equal(t, sandbox.Hostname, got.Hostname)
		require.Equal(t, "127.0.1.1", got.Address)
		require.Contains(t, got.Options, "ro", "mounted read-only")
	})
	t.Run("on with network access", func(t *testing.T) {
		spec := pySpec(t, code)
		spec.Limits.Network = true
		res := run(t, spec)
		require.True(t, res.Success, "stderr: %s", res.Stderr)
		var ifaces []string
		require.NoError(t, json.Unmarshal(res.Output, &ifaces))
		require.Contains(t, ifaces, "eth0")
	})
}

// tryWrites reports, for each path, the errno of creating a file there (0
// when it worked).
const tryWrites = `
import json, sys
out = {}
for p in sys.argv[1:]:
    try:
        with open(p, "w") as f:
            f.write("x")
        out[p] = 0
    except OSError as e:
        out[p] = e.errno
print(json.dumps(out))
`

// Which paths refuse writes is sandboxtest.ReadOnly, on every backend.
// Here, what is Docker's own: /dev/shm (ShmSize) takes writes, and a
// refused write leaves nothing in the read-only workspace on the host.
func TestReadOnlyWorkspaceStaysUntouched(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	require.NoError(t, os.Chmod(ws, 0o755))
	spec := pySpec(t, tryWrites)
	spec.Workspace = ws
	spec.Argv = append(spec.Argv, "/workspace/x", "/dev/shm/ok")
	res := run(t, spec)
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	var got map[string]int
	require.NoError(t, json.Unmarshal(res.Output, &got))
	require.Equal(t, map[string]int{"/workspace/x": int(unix.EROFS), "/dev/shm/ok": 0}, got)
	entries, err := os.ReadDir(ws)
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestWritableWorkspaceFilesBelongToTheCaller(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "input.txt"), []byte("from host"), 0o644))
	spec := pySpec(t, `
import os
print(open("input.txt").read())
os.makedirs("out/deep")
with open("out/deep/result.txt", "w") as f:
    f.write("from sandbox")
with open("input.txt", "a") as f:
    f.write(" and sandbox")
`)
	writable(t, &spec, ws)
	res := run(t, spec)
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	require.Equal(t, "from host\n", res.Stdout)

	b, err := os.ReadFile(filepath.Join(ws, "out", "deep", "result.txt"))
	require.NoError(t, err)
	require.Equal(t, "from sandbox", string(b))
	b, err = os.ReadFile(filepath.Join(ws, "input.txt"))
	require.NoError(t, err)
	require.Equal(t, "from host and sandbox", string(b))

	for _, p := range []string{".", "input.txt", "out", "out/deep", "out/deep/result.txt"} {
		var st unix.Stat_t
		full := filepath.Join(ws, p)
		require.NoError(t, unix.Lstat(full, &st))
		require.Equal(t, uint32(os.Getuid()), st.Uid, "%s owned by the caller", p)
		require.Equal(t, uint32(os.Getgid()), st.Gid, "%s in the caller's group", p)
		for _, attr := range []string{"system.posix_acl_access", "system.posix_acl_default"} {
			_, err := unix.Lgetxattr(full, attr, nil)
			require.ErrorIs(t, err, unix.ENODATA, "%s: no %s left behind", p, attr)
		}
	}
}

func TestSkillMountedReadOnlyAtItsPath(t *testing.T) {
	t.Parallel()
	skill := newSkill(t, map[string]string{"scripts/hello.sh": "echo \"hello from $SKILL_DIR\"\n"})
	spec := pySpec(t, "")
	spec.SkillDir = skill
	spec.Argv = []string{"bash", "/skills/t/scripts/hello.sh"}
	res := run(t, spec)
	require.True(t, res.Success, "stderr: %s", res.Stderr)
	require.Equal(t, "hello from /skills/t\n", res.Stdout)
}
