//go:build integration

package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// The CLI tests run the real sandboxrun binary end to end: exit statuses,
// relayed output, audit log and workspace files are what a user sees.

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

func sandboxrunBin(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sandboxrun-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "sandboxrun")
		out, err := exec.Command("go", "build", "-o", cliPath, "../cmd/sandboxrun").CombinedOutput()
		if err != nil {
			cliErr = err
			cliPath = string(out)
		}
	})
	require.NoError(t, cliErr, "go build ./cmd/sandboxrun: %s", cliPath)
	return cliPath
}

// removeCLI deletes the binary built for the suite; TestMain calls it.
func removeCLI() {
	if cliPath != "" && cliErr == nil {
		_ = os.RemoveAll(filepath.Dir(cliPath))
	}
}

type cliResult struct {
	code           int
	stdout, stderr string
}

// cli runs sandboxrun with args in dir and returns what a shell would see.
func cli(t *testing.T, dir string, env []string, stdin string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(sandboxrunBin(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Start()
	if err == nil {
		trackOwner(t, cmd.Process.Pid)
		err = cmd.Wait()
	}
	code := 0
	var ee *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &ee, "sandboxrun did not run: %v", err)
		code = ee.ExitCode()
	}
	return cliResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// cliSkill writes a skill named name under a fresh skills root and returns
// the root.
func cliSkill(t *testing.T, name, frontmatter string, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.Chmod(root, 0o755))
	dir := filepath.Join(root, name)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	md := "---\nname: " + name + "\ndescription: CLI test skill.\n" + frontmatter + "---\nBody.\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644))
	for p, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644))
	}
	return root
}

func TestCLIRunExitStatuses(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "cli-status", "", map[string]string{
		"scripts/ok.py":      "import json,sys; print(json.dumps(json.load(sys.stdin)))\n",
		"scripts/fail.py":    "import sys; print('nope', file=sys.stderr); sys.exit(7)\n",
		"scripts/sleep.py":   "import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)\n",
		"scripts/segv.sh":    "kill -SEGV $$\n",
		"scripts/killed.sh":  "kill -KILL $$\n",
		"scripts/noexec.txt": "no interpreter\n",
	})
	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    string
		stderrHas string
	}{
		{"success relays stdout", []string{"run", "cli-status", "scripts/ok.py", "--args", `{"a":1}`}, 0, "{\"a\": 1}\n", ""},
		{"script exit status passes through", []string{"run", "cli-status", "scripts/fail.py"}, 7, "", "nope"},
		{"timeout is 124", []string{"run", "--timeout", "1s", "cli-status", "scripts/sleep.py"}, 124, "", "timed out after 1s"},
		{"SIGSEGV is 139", []string{"run", "cli-status", "scripts/segv.sh"}, 139, "", "SIGSEGV"},
		{"SIGKILL is 137", []string{"run", "cli-status", "scripts/killed.sh"}, 137, "", "SIGKILL"},
		{"no interpreter is refused", []string{"run", "cli-status", "scripts/noexec.txt"}, 2, "", "interpreter"},
		{"traversal is refused", []string{"run", "cli-status", "scripts/../SKILL.md"}, 2, "", "scripts/"},
		{"a timeout past the absolute bound is refused", []string{"run", "--timeout", "11m", "cli-status", "scripts/ok.py"}, 2, "", "timeout"},
		{"missing image is an environment failure", []string{"run", "--image", "sandboxrun/missing:0", "cli-status", "scripts/ok.py"}, 3, "", "pull or build it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, root, nil, "", append([]string{"--skills", root}, tt.args...)...)
			require.Equal(t, tt.code, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			if tt.stdout != "" {
				require.Equal(t, tt.stdout, r.stdout)
			}
			require.Contains(t, r.stderr, tt.stderrHas)
			requireNoSkillContainers(t, "cli-status")
		})
	}
}

func TestCLIDockerUnreachableIsExit3(t *testing.T) {
	t.Parallel()
	r := cli(t, "..", []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, "", "run", "hello", "scripts/echo.py")
	require.Equal(t, 3, r.code, r.stderr)
	require.Contains(t, r.stderr, "unreachable")
}

func TestCLIJSONResultAndAudit(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	args := `{"secret":"do-not-log-me"}`
	r := cli(t, "..", nil, args, "run", "--json", "--audit-log", audit, "hello", "scripts/echo.js", "--args", "-")
	require.Equal(t, 0, r.code, r.stderr)
	var res sandbox.Result
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.True(t, res.Success)
	require.Equal(t, "node", res.Runtime)
	require.JSONEq(t, `{"skill":"hello","runtime":"node","args":{"secret":"do-not-log-me"}}`, string(res.Output))

	line, err := os.ReadFile(audit)
	require.NoError(t, err)
	require.NotContains(t, string(line), "do-not-log-me", "the audit log must not hold the arguments")
	var rec map[string]any
	require.NoError(t, json.Unmarshal(line, &rec))
	sum := sha256.Sum256([]byte(args))
	require.Equal(t, hex.EncodeToString(sum[:]), rec["args_sha256"])
	require.Equal(t, res.ID, rec["run_id"])
	require.Equal(t, "scripts/echo.js", rec["script"])
	requireNoSkillContainers(t, "hello")
}

func TestCLIExec(t *testing.T) {
	t.Parallel()
	r := cli(t, "..", nil, "", "exec", "hello", "--", `echo '{"via":"exec"}' | python3 /skills/hello/scripts/echo.py`)
	require.Equal(t, 0, r.code, r.stderr)
	require.JSONEq(t, `{"skill":"hello","runtime":"python","args":{"via":"exec"}}`, r.stdout)

	r = cli(t, "..", nil, "", "exec", "hello", "--", "echo hi; rm -rf /workspace")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "rm")
	requireNoSkillContainers(t, "hello")
}

func TestCLIPython(t *testing.T) {
	t.Parallel()
	r := cli(t, "..", nil, "", "python", "--json", "data-analysis", "--code", "print(6 * 7)")
	require.Equal(t, 0, r.code, r.stderr)
	var pr map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &pr))
	require.Equal(t, "data-analysis", pr["skill_name"])
	require.Equal(t, "42\n", pr["stdout"])
	require.EqualValues(t, 0, pr["returncode"])
	require.Equal(t, false, pr["timed_out"])

	r = cli(t, "..", nil, "", "python", "--json", "--timeout", "1s", "data-analysis", "--code", "import time; time.sleep(30)")
	require.Equal(t, 124, r.code, r.stderr)
	pr = map[string]any{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &pr))
	require.EqualValues(t, -1, pr["returncode"])
	require.Equal(t, true, pr["timed_out"])
	require.Contains(t, pr["error"], "1 seconds")
	requireNoSkillContainers(t, "data-analysis")
}

func TestCLIWorkspaceWrite(t *testing.T) {
	t.Parallel()
	script := map[string]string{"scripts/write.sh": "echo data > /workspace/out.txt && echo wrote\n"}
	ws := t.TempDir()
	readOnly := cliSkill(t, "cli-ro", "allowed-tools: Read\n", script)
	r := cli(t, ws, nil, "", "--skills", readOnly, "run", "cli-ro", "scripts/write.sh")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "Read-only file system")
	require.NoFileExists(t, filepath.Join(ws, "out.txt"))

	writable := cliSkill(t, "cli-rw", "allowed-tools: Read Write\n", script)
	r = cli(t, ws, nil, "", "--skills", writable, "run", "cli-rw", "scripts/write.sh")
	require.Equal(t, 0, r.code, r.stderr)
	fi, err := os.Stat(filepath.Join(ws, "out.txt"))
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	require.Equal(t, uint32(os.Getuid()), st.Uid, "file must belong to the caller")
	requireNoSkillContainers(t, "cli-rw")
}

func TestCLIInterruptRemovesTheSandbox(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "cli-interrupt", "", map[string]string{
		"scripts/wait.py": "import time\nprint('started', flush=True)\ntime.sleep(60)\n",
	})
	cmd := exec.Command(sandboxrunBin(t), "--skills", root, "run", "cli-interrupt", "scripts/wait.py")
	cmd.Dir = root
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	trackOwner(t, cmd.Process.Pid)
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// Interrupt only once the script is running inside its container.
	line := make([]byte, len("started\n"))
	_, err = io.ReadFull(stdout, line)
	if err != nil {
		_ = cmd.Wait() // stderr is complete only once the process is gone
		t.Fatalf("no output from the script: %v; stderr: %s", err, errb.String())
	}
	require.Equal(t, "started\n", string(line))
	require.NoError(t, cmd.Process.Signal(os.Interrupt))

	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 130, ee.ExitCode(), "stderr: %s", errb.String())
	requireNoSkillContainers(t, "cli-interrupt")
}

// The Agent Skills spec allows lowercase Unicode letters in names; such a
// skill runs like any other, at /skills/<name>.
func TestCLIUnicodeSkillName(t *testing.T) {
	t.Parallel()
	root := cliSkill(t, "café", "", map[string]string{
		"scripts/where.sh": "echo \"$SKILL_DIR\"\n",
	})
	r := cli(t, root, nil, "", "--skills", root, "run", "café", "scripts/where.sh")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "/skills/café\n", r.stdout)
	requireNoSkillContainers(t, "café")
}

// A developer on a laptop is not root: the sandbox then runs as the caller's
// own uid, so files written in a writable workspace are simply theirs. Run as
// root, the test plays such a developer (uid 1500, in the Docker socket's
// group); otherwise it is one already.
func TestCLINonRootCallerOwnsItsFiles(t *testing.T) {
	t.Parallel()
	uid, gid := os.Getuid(), os.Getgid()
	var cred *syscall.Credential
	if uid == 0 {
		sock, err := os.Stat("/var/run/docker.sock")
		require.NoError(t, err, "this test talks to the engine through /var/run/docker.sock")
		uid, gid = 1500, 1500
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{sock.Sys().(*syscall.Stat_t).Gid}}
	}
	// The caller must reach both folders on the host, so they live under a
	// world-traversable parent rather than the test's private temp dir.
	base, err := os.MkdirTemp("", "sandboxrun-dev-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	root := filepath.Join(base, "skills")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "cli-dev", "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "cli-dev", "SKILL.md"),
		[]byte("---\nname: cli-dev\ndescription: CLI test skill.\nallowed-tools: Read Write\n---\nBody.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "cli-dev", "scripts", "write.sh"),
		[]byte("id -u; echo data > /workspace/out.txt\n"), 0o644))
	ws := filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(ws, 0o755))
	require.NoError(t, os.Chown(ws, uid, gid))
	// A file and a folder the caller cannot read stay out of the sandbox's
	// copy, and the run goes on (they are root's when the test runs as root).
	private := filepath.Join(ws, "private.txt")
	require.NoError(t, os.WriteFile(private, []byte("root's"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(ws, "private"), 0o700))
	bin := sandboxrunBin(t)
	require.NoError(t, os.Chmod(filepath.Dir(bin), 0o755))

	cmd := exec.Command(bin, "--skills", root, "run", "--workspace", ws, "cli-dev", "scripts/write.sh")
	cmd.Dir = ws
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	trackOwner(t, cmd.Process.Pid)
	require.NoError(t, cmd.Wait(), "stderr: %s", errb.String())
	require.Equal(t, fmt.Sprintf("%d\n", uid), out.String(), "the script runs as the caller")
	fi, err := os.Stat(filepath.Join(ws, "out.txt"))
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	require.Equal(t, []uint32{uint32(uid), uint32(gid)}, []uint32{st.Uid, st.Gid})
	b, err := os.ReadFile(private)
	require.NoError(t, err)
	require.Equal(t, "root's", string(b), "an unreadable file is neither copied nor deleted")
	requireNoSkillContainers(t, "cli-dev")
}
