package sandboxtest

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// ExitCodes checks that a script's exit status is the Result's, only 0 is success,
// and stdout that is one JSON value becomes Output.
func ExitCodes(t *testing.T, e Env) {
	res := e.run(t, e.spec(t, `import sys; sys.stderr.write("bad input\n"); sys.exit(3)`))
	require.False(t, res.Success)
	require.Equal(t, 3, res.ExitCode)
	require.Equal(t, "bad input\n", res.Stderr)
	require.Empty(t, res.Stdout)
	require.False(t, res.TimedOut)
	require.False(t, res.OOMKilled)
	require.Empty(t, res.Signal)
	require.Contains(t, res.Error, "exit status 3")
	require.Nil(t, res.Output)

	res = e.run(t, e.spec(t, `print('{"ok": true, "n": 2}')`))
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	require.Equal(t, 0, res.ExitCode)
	require.Empty(t, res.Error)
	require.JSONEq(t, `{"ok": true, "n": 2}`, string(res.Output))
	require.Positive(t, res.DurationMS)
	require.Positive(t, res.PeakRSSKB)

	spec := e.spec(t, "")
	spec.Argv = []string{"no-such-command-here"}
	res = e.run(t, spec)
	require.False(t, res.Success)
	require.Equal(t, 127, res.ExitCode, "not found is 127, as in a shell")
}

// echoScript prints its JSON stdin and a few variables of the job's
// environment.
const echoScript = `import json, os, sys
args = json.load(sys.stdin)
env = {k: os.environ.get(k) for k in ("SKILL_NAME", "SKILL_DIR", "SANDBOXRUN_RUN_ID", "HOME", "CALLER_VAR")}
print(json.dumps({"args": args, "env": env, "cwd": os.getcwd(), "argv": sys.argv[1:]}))
`

// StdinJSONAndEnv checks that a script from the skill folder gets the job's stdin
// (JSON arguments), its argv, the skill's variables and the caller's,
// and nothing of the host's environment.
func StdinJSONAndEnv(t *testing.T, e Env) {
	spec := e.spec(t, "")
	spec.SkillDir = e.skillDir(t, map[string]string{"scripts/echo.py": echoScript})
	spec.Argv = []string{"python3", "/skills/t/scripts/echo.py", "a b", "--x=1"}
	spec.Stdin = []byte(`{"greeting": "hé", "list": [1, 2]}`)
	spec.Env = map[string]string{"CALLER_VAR": "v w"}
	res := e.run(t, spec)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	var got struct {
		Args map[string]any    `json:"args"`
		Env  map[string]string `json:"env"`
		Cwd  string            `json:"cwd"`
		Argv []string          `json:"argv"`
	}
	require.NoError(t, json.Unmarshal(res.Output, &got), "stdout: %s", res.Stdout)
	require.Equal(t, map[string]any{"greeting": "hé", "list": []any{1.0, 2.0}}, got.Args)
	require.Equal(t, []string{"a b", "--x=1"}, got.Argv)
	require.Equal(t, "/workspace", got.Cwd)
	require.Equal(t, map[string]string{
		"SKILL_NAME": "t", "SKILL_DIR": "/skills/t", "SANDBOXRUN_RUN_ID": spec.RunID,
		"HOME": "/tmp", "CALLER_VAR": "v w",
	}, got.Env)

	// A script that never reads its stdin must not hang the run.
	spec = e.spec(t, `print("ignored stdin")`)
	spec.Stdin = []byte(strings.Repeat("x", 1<<20))
	res = e.run(t, spec)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	require.Equal(t, "ignored stdin\n", res.Stdout)
}

// Signals checks that death by signal N is exit code -N with the signal's name, and a
// small script killing itself is not an out-of-memory kill.
func Signals(t *testing.T, e Env) {
	for _, tc := range []struct {
		sig  string
		code int
	}{{"SIGSEGV", -11}, {"SIGKILL", -9}, {"SIGABRT", -6}, {"SIGTERM", -15}} {
		t.Run(tc.sig, func(t *testing.T) {
			res := e.run(t, e.spec(t, "import os, signal; os.kill(os.getpid(), signal."+tc.sig+")"))
			require.Equal(t, tc.code, res.ExitCode)
			require.Equal(t, tc.sig, res.Signal)
			require.False(t, res.Success)
			require.False(t, res.OOMKilled)
			require.False(t, res.TimedOut)
			require.Contains(t, res.Error, "killed by signal "+tc.sig)
		})
	}
}

// Timeout checks that a script past its limit is killed even when it ignores
// SIGTERM; the Result says 124, timed_out and ends stderr with a
// "Timeout:" line, and keeps what was printed before.
func Timeout(t *testing.T, e Env) {
	spec := e.spec(t, `
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("started", flush=True)
while True:
    time.sleep(0.05)
`)
	spec.Limits.Timeout = 2 * time.Second
	start := time.Now()
	res := e.run(t, spec)
	took := time.Since(start)
	require.True(t, res.TimedOut, "result: %+v", res)
	require.Equal(t, sandbox.ExitTimeout, res.ExitCode)
	require.Empty(t, res.Signal)
	require.False(t, res.Success)
	require.Equal(t, "started\n", res.Stdout)
	require.True(t, strings.HasSuffix(res.Stderr, "Timeout: script exceeded 2s limit and was killed\n"), "stderr: %q", res.Stderr)
	require.GreaterOrEqual(t, took, 2*time.Second)
	require.NotContains(t, res.Error, "did not report", "sandbox-init killed it, not the host's backstop")
	require.InDelta(t, 2.0, res.Limits.TimeoutSec, 0.001)
}

// OutOfMemory checks that a script past its memory limit is killed and the Result
// says out of memory.
func OutOfMemory(t *testing.T, e Env) {
	spec := e.spec(t, `
chunks = []
while True:
    chunks.append(b"x" * (4 << 20))
`)
	spec.Limits.MemoryBytes = 64 << 20
	res := e.run(t, spec)
	require.True(t, res.OOMKilled, "result: %+v", res)
	require.False(t, res.Success)
	require.Equal(t, -9, res.ExitCode)
	require.Equal(t, "SIGKILL", res.Signal)
	require.Contains(t, res.Error, "out of memory")
}

// OutputCaps checks that each stream keeps at most OutputBytes, says it was cut and
// counts everything written; cut output is never parsed as JSON.
func OutputCaps(t *testing.T, e Env) {
	spec := e.spec(t, `
import sys
sys.stdout.write("[" + "1," * 5000 + "1]")
sys.stderr.write("e" * 3000)
`)
	spec.Limits.OutputBytes = 1000
	res := e.run(t, spec)
	require.True(t, res.Success, "error: %s", res.Error)
	require.Len(t, res.Stdout, 1000)
	require.True(t, res.StdoutTruncated)
	require.EqualValues(t, 2+2*5000+1, res.StdoutBytes)
	require.Nil(t, res.Output, "cut output is not JSON")
	require.Equal(t, strings.Repeat("e", 1000), res.Stderr)
	require.True(t, res.StderrTruncated)
	require.EqualValues(t, 3000, res.StderrBytes)

	// Under the cap nothing is cut.
	res = e.run(t, e.spec(t, `print("x" * 998, end="")`))
	require.False(t, res.StdoutTruncated)
	require.EqualValues(t, 998, res.StdoutBytes)
}

// tryWrites reports, for each path, the errno of creating or opening it
// for writing (0 when that worked).
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

// ReadOnly checks that the skill folder, a read-only workspace and the root file
// system refuse writes with EROFS; /tmp takes them.
func ReadOnly(t *testing.T, e Env) {
	spec := e.spec(t, tryWrites, "/skills/t/new.txt", "/skills/t/SKILL.md", "/etc/passwd",
		"/usr/bin/x", "/new", "/workspace/x", "/tmp/ok")
	spec.Workspace = e.workspace(t)
	res := e.run(t, spec)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	var got map[string]int
	require.NoError(t, json.Unmarshal(res.Output, &got), "stdout: %s", res.Stdout)
	erofs := int(unix.EROFS)
	require.Equal(t, map[string]int{
		"/skills/t/new.txt":  erofs,
		"/skills/t/SKILL.md": erofs,
		"/etc/passwd":        erofs,
		"/usr/bin/x":         erofs,
		"/new":               erofs,
		"/workspace/x":       erofs,
		"/tmp/ok":            0,
	}, got)
}

// TmpIsSizeLimited checks that /tmp holds at most TmpBytes.
func TmpIsSizeLimited(t *testing.T, e Env) {
	spec := e.spec(t, `
import errno
try:
    with open("/tmp/big", "wb") as f:
        f.write(b"x" * (20 << 20))
    print("wrote")
except OSError as e:
    print(errno.errorcode[e.errno])
`)
	spec.Limits.TmpBytes = 4 << 20
	res := e.run(t, spec)
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	require.Equal(t, "ENOSPC\n", res.Stdout)
}

// NonRoot checks that the script never runs as uid or gid 0, holds no capability,
// cannot gain privileges and is under a seccomp filter.
func NonRoot(t *testing.T, e Env) {
	res := e.run(t, e.spec(t, `
import json, os
status = {}
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    status[k] = v.strip()
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(), "groups": os.getgroups(),
                  "status": status}))
`))
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	var got struct {
		UID, GID, EUID int
		Groups         []int
		Status         map[string]string
	}
	require.NoError(t, json.Unmarshal(res.Output, &got))
	require.NotZero(t, got.UID, "never root")
	require.NotZero(t, got.EUID)
	require.NotZero(t, got.GID)
	require.NotContains(t, got.Groups, 0)
	for _, f := range []string{"Uid", "Gid"} {
		require.NotContains(t, strings.Fields(got.Status[f]), "0", "%s: %s", f, got.Status[f])
	}
	for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		v, err := strconv.ParseUint(got.Status[c], 16, 64)
		require.NoError(t, err, c)
		require.Zero(t, v, "%s is %s", c, got.Status[c])
	}
	require.Equal(t, "1", got.Status["NoNewPrivs"])
	require.Equal(t, "2", got.Status["Seccomp"], "a seccomp filter is on")
}

// NoNetwork checks that without network access the sandbox has the loopback
// interface only.
func NoNetwork(t *testing.T, e Env) {
	res := e.run(t, e.spec(t, `import json, os; print(json.dumps(sorted(os.listdir("/sys/class/net"))))`))
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	require.JSONEq(t, `["lo"]`, string(res.Output))
	require.False(t, res.Limits.Network)
}

// localhostScript opens a listener on localhost, connects to it by name and
// echoes a message; it reports what the names resolve to, the host name,
// the interfaces, and whether the script can change /etc/hosts.
const localhostScript = `import errno, json, os, socket
out = {"interfaces": sorted(os.listdir("/sys/class/net"))}
out["localhost"] = sorted({ai[4][0] for ai in socket.getaddrinfo("localhost", None, type=socket.SOCK_STREAM)})
out["ip6-localhost"] = socket.getaddrinfo("ip6-localhost", None, socket.AF_INET6)[0][4][0]
out["hostname"] = socket.gethostname()
out["hostname_address"] = socket.gethostbyname(out["hostname"])
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("localhost", 0))
srv.listen(1)
port = srv.getsockname()[1]
c = socket.create_connection(("localhost", port), timeout=5)
conn, _ = srv.accept()
c.sendall(b"ping")
out["echo"] = conn.recv(4).decode()
try:
    open("/etc/hosts", "a").close()
    out["hosts_write"] = 0
except OSError as e:
    out["hosts_write"] = e.errno
print(json.dumps(out))
`

// Localhost checks that a sandbox without network still has the usual
// loopback names (scripts start a server and wait for it on localhost) and
// a host name that resolves, that a script connects to a listener it opened on
// localhost, that none of it adds an interface, and that the script cannot
// change the names.
func Localhost(t *testing.T, e Env) {
	res := e.run(t, e.spec(t, localhostScript))
	require.True(t, res.Success, "stderr: %s; error: %s", res.Stderr, res.Error)
	var got struct {
		Interfaces      []string `json:"interfaces"`
		Localhost       []string `json:"localhost"`
		IP6Localhost    string   `json:"ip6-localhost"`
		Hostname        string   `json:"hostname"`
		HostnameAddress string   `json:"hostname_address"`
		Echo            string   `json:"echo"`
		HostsWrite      int      `json:"hosts_write"`
	}
	require.NoError(t, json.Unmarshal(res.Output, &got), "stdout: %s", res.Stdout)
	require.Equal(t, []string{"lo"}, got.Interfaces, "names, not a network")
	require.False(t, res.Limits.Network)
	require.Contains(t, got.Localhost, "127.0.0.1")
	for _, a := range got.Localhost {
		require.Contains(t, []string{"127.0.0.1", "::1"}, a, "localhost is loopback only")
	}
	require.Equal(t, "::1", got.IP6Localhost)
	// Where the name points is the backend's: loopback on Docker, the
	// address a Pod is given on Kubernetes (kubelet writes /etc/hosts).
	require.NotEmpty(t, got.Hostname)
	require.NotEmpty(t, got.HostnameAddress, "the sandbox's own name resolves")
	require.Equal(t, "ping", got.Echo)
	require.Contains(t, []int{int(unix.EROFS), int(unix.EACCES)}, got.HostsWrite, "/etc/hosts is read-only to the script")
}
