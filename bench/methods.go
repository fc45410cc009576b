package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
	"github.com/sandboxrun/sandboxrun/sandbox/oci"
)

const script = `import json, sys
args = json.load(sys.stdin)
print(json.dumps({"hello": args["name"]}))
`

// want is what the script prints for the bench's arguments.
var want = []byte(`{"hello": "bench"}`)

// method is one way of running the script once. settle, when set, waits
// for the work the method left in the background.
type method struct {
	name   string
	run    func(context.Context) (time.Duration, error)
	settle func(context.Context) error
}

type bench struct {
	cfg       config
	root      string // holds the skill folder and an empty workspace
	skill     string
	workspace string
	policy    string // the CLI rows' policy file
	execName  string // the running container `docker exec` goes into

	cold, warm   *docker.Runner
	oci, ociWarm *oci.Runner // nil without -oci-state

	mu     sync.Mutex
	n      int
	cliRSS []int64 // KiB, one per CLI run
}

func newBench(ctx context.Context, cfg config) (*bench, error) {
	b := &bench{cfg: cfg}
	if err := b.writeSkill(); err != nil {
		b.close()
		return nil, err
	}
	var err error
	if b.cold, err = newRunner(cfg, 1, 0); err != nil {
		b.close()
		return nil, err
	}
	if b.warm, err = newRunner(cfg, 1, 1); err != nil {
		b.close()
		return nil, err
	}
	if err := b.cold.Ping(ctx); err != nil {
		b.close()
		return nil, err
	}
	if _, err := b.cold.CheckImage(ctx, cfg.image); err != nil {
		b.close()
		return nil, err
	}
	if err := b.startExecContainer(ctx); err != nil {
		b.close()
		return nil, err
	}
	if cfg.ociState != "" {
		if b.oci, err = newOCIRunner(ctx, cfg, 1, 0); err != nil {
			b.close()
			return nil, err
		}
		if b.ociWarm, err = newOCIRunner(ctx, cfg, 1, 1); err != nil {
			b.close()
			return nil, err
		}
	}
	return b, nil
}

// newRunner is a library runner with at most conc executions at once and a
// warm pool of pool containers (0: none).
func newRunner(cfg config, conc, pool int) (*docker.Runner, error) {
	opts := []docker.Option{docker.WithVersion(sandboxrun.Version), docker.WithDefaultImage(cfg.image),
		docker.WithMaxConcurrent(conc), docker.WithOCIRuntime(cfg.runtime), docker.WithUsrVolumes(cfg.usrVolumes)}
	if pool > 0 {
		opts = append(opts, docker.WithWarmPool(pool, time.Minute))
	}
	return docker.New(opts...)
}

func (b *bench) close() {
	if b.execName != "" {
		_ = exec.Command("docker", "rm", "-f", b.execName).Run()
	}
	for _, d := range []*docker.Runner{b.cold, b.warm} {
		if d != nil {
			d.Close()
		}
	}
	for _, r := range []*oci.Runner{b.oci, b.ociWarm} {
		if r != nil {
			_ = r.Close()
		}
	}
	if b.root != "" {
		os.RemoveAll(b.root)
	}
}

// latencyMethods come with docker run first: the ratios are against it.
func (b *bench) latencyMethods() []method {
	ms := []method{
		{name: "docker run --rm -i", run: b.dockerRun},
		{name: "docker exec -i (running container)", run: b.dockerExec},
	}
	if b.cfg.cli != "" {
		ms = append(ms, method{name: "sandboxrun run (CLI), cold", run: b.cliRun})
	}
	ms = append(ms,
		method{name: "library, cold", run: b.library(b.cold), settle: b.cold.WaitIdle},
		method{name: "library, warm pool", run: b.library(b.warm), settle: b.warm.WaitIdle},
	)
	if b.oci != nil {
		ms = append(ms, method{name: b.ociName("cold"), run: b.library(b.oci), settle: ociSettle(b.oci, 0)},
			method{name: b.ociName("warm pool"), run: b.library(b.ociWarm), settle: ociSettle(b.ociWarm, 1)})
	}
	return ms
}

func limits() policy.Limits {
	return policy.Limits{Timeout: 30 * time.Second, MemoryBytes: 256 << 20, CPUs: 1, Pids: 128,
		OutputBytes: 1 << 20, TmpBytes: 16 << 20}
}

func (b *bench) spec() sandbox.Spec {
	return sandbox.Spec{
		Skill:    "bench",
		SkillDir: b.skill,
		Argv:     []string{"python3", "/skills/bench/scripts/hello.py"},
		Runtime:  "python3",
		Stdin:    []byte(`{"name": "bench"}`),
		Limits:   limits(),
	}
}

func (b *bench) library(d sandbox.Runner) func(context.Context) (time.Duration, error) {
	return func(ctx context.Context) (time.Duration, error) {
		start := time.Now()
		res, err := d.Run(ctx, b.spec())
		elapsed := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("library run: %w", err)
		}
		if !res.Success || !bytes.Contains([]byte(res.Stdout), want) {
			return 0, fmt.Errorf("library run failed: %s: %q %q", res.Error, res.Stdout, res.Stderr)
		}
		return elapsed, nil
	}
}

// hardening is the container configuration sandboxrun gives a sandbox, as
// Docker CLI flags, for the baselines.
func (b *bench) hardening(name string) []string {
	l := limits()
	mem := strconv.FormatInt(l.MemoryBytes, 10)
	var rt []string
	if b.cfg.runtime != "" {
		rt = []string{"--runtime", b.cfg.runtime}
	}
	return append(rt, "--name", name,
		"--label", sandbox.LabelManaged+"=true", "--label", sandbox.LabelOwnerPID+"="+strconv.Itoa(os.Getpid()),
		"--user", "65532:65532", "--read-only", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--ipc", "private", "--cgroupns", "private",
		"--memory", mem, "--memory-swap", mem, "--cpus", "1", "--pids-limit", strconv.FormatInt(l.Pids, 10),
		"--ulimit", "core=0:0", "--ulimit", "nofile=1024:4096", "--log-driver", "none",
		"--shm-size", strconv.FormatInt(l.TmpBytes, 10),
		"--tmpfs", fmt.Sprintf("/tmp:rw,noexec,nosuid,nodev,size=%d,mode=1777", l.TmpBytes),
		"--mount", "type=bind,src="+b.skill+",dst=/skills/bench,readonly,bind-propagation=rprivate,bind-nonrecursive",
	)
}

func (b *bench) nextName() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	return fmt.Sprintf("sandboxrun-bench-%d-%d", os.Getpid(), b.n)
}

// dockerRun runs the same container with the Docker CLI, the same job on
// stdin and sandbox-init reading it.
func (b *bench) dockerRun(ctx context.Context) (time.Duration, error) {
	spec := b.spec()
	l := spec.Limits
	job, err := json.Marshal(frame.Job{
		Argv: spec.Argv, Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp", "LANG=C.UTF-8"},
		Dir: "/workspace", Stdin: spec.Stdin, TimeoutMS: l.Timeout.Milliseconds(), GraceMS: 2000, OutputCap: l.OutputBytes,
	})
	if err != nil {
		return 0, err
	}
	args := append([]string{"run", "--rm", "-i"}, b.hardening(b.nextName())...)
	args = append(args, b.cfg.image)
	out, _, elapsed, err := timed(ctx, job, "", "docker", args...)
	if err != nil {
		return 0, fmt.Errorf("docker run: %w", err)
	}
	if !bytes.Contains(out, []byte(`"exit_code":0`)) || !bytes.Contains(out, want) {
		return 0, fmt.Errorf("docker run: the script failed: %q", out)
	}
	return elapsed, nil
}

// startExecContainer starts the long-running container docker exec uses.
func (b *bench) startExecContainer(ctx context.Context) error {
	name := b.nextName()
	args := append([]string{"run", "-d", "--entrypoint", "sleep"}, b.hardening(name)...)
	args = append(args, b.cfg.image, "infinity")
	if _, _, _, err := timed(ctx, nil, "", "docker", args...); err != nil {
		return fmt.Errorf("start the container for docker exec: %w", err)
	}
	b.execName = name
	return nil
}

func (b *bench) dockerExec(ctx context.Context) (time.Duration, error) {
	out, _, elapsed, err := timed(ctx, []byte(`{"name": "bench"}`), "", "docker", "exec", "-i", b.execName,
		"python3", "/skills/bench/scripts/hello.py")
	if err != nil {
		return 0, fmt.Errorf("docker exec: %w", err)
	}
	if !bytes.Contains(out, want) {
		return 0, fmt.Errorf("docker exec: the script failed: %q", out)
	}
	return elapsed, nil
}

// cliRun is what an agent host pays per tool call: a `sandboxrun run`
// process, from its start to its exit. It mounts an empty workspace.
func (b *bench) cliRun(ctx context.Context) (time.Duration, error) {
	out, rss, elapsed, err := timed(ctx, nil, b.workspace, b.cfg.cli, "run", "--skills", filepath.Dir(b.skill),
		"--policy", b.policy, "--workspace", b.workspace, "--oci-runtime", b.cfg.runtime, "bench", "scripts/hello.py", "--args", `{"name": "bench"}`)
	if err != nil {
		return 0, fmt.Errorf("sandboxrun run: %w", err)
	}
	if !bytes.Contains(out, want) {
		return 0, fmt.Errorf("sandboxrun run: the script failed: %q", out)
	}
	b.mu.Lock()
	b.cliRSS = append(b.cliRSS, rss)
	b.mu.Unlock()
	return elapsed, nil
}

// timed runs a command with stdin and returns its stdout, its peak RSS in
// KiB and how long it took from start to exit.
func timed(ctx context.Context, stdin []byte, dir, name string, args ...string) ([]byte, int64, time.Duration, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: %s", err, stderr.String())
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss
	}
	return stdout.Bytes(), rss, elapsed, nil
}

// writeSkill writes the benchmark's skill and an empty workspace. Both
// must be world-readable: the sandbox runs as an unprivileged uid.
func (b *bench) writeSkill() error {
	root, err := os.MkdirTemp("", "sandboxrun-bench-")
	if err != nil {
		return err
	}
	b.root = root
	b.skill = filepath.Join(root, "skills", "bench")
	b.workspace = filepath.Join(root, "workspace")
	for _, d := range []string{filepath.Join(b.skill, "scripts"), b.workspace} {
		if err := os.MkdirAll(d, 0o755); err != nil { //nolint:gosec // read by the sandbox user
			return err
		}
	}
	var errs []error
	for _, p := range []string{root, filepath.Dir(b.skill), b.skill, filepath.Join(b.skill, "scripts"), b.workspace} {
		errs = append(errs, os.Chmod(p, 0o755)) //nolint:gosec // read by the sandbox user
	}
	// The CLI rows' policy: the built-in one, but for the usr volumes.
	b.policy = filepath.Join(root, "policy.yaml")
	errs = append(errs, os.WriteFile(b.policy, fmt.Appendf(nil, "docker:\n  usr_volumes: %t\n", b.cfg.usrVolumes), 0o644)) //nolint:gosec // not secret
	files := map[string]string{
		"SKILL.md":         "---\nname: bench\ndescription: Prints a greeting, for the benchmark.\n---\n",
		"scripts/hello.py": script,
	}
	for name, body := range files {
		errs = append(errs, os.WriteFile(filepath.Join(b.skill, name), []byte(body), 0o644)) //nolint:gosec // read by the sandbox user
	}
	return errors.Join(errs...)
}
