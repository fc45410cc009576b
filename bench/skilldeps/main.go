// Command skilldeps measures what per-skill dependency images cost: the
// first build of a skill image, the latency of a cached run of a skill with
// dependencies against the same run of a skill without any (same script,
// same limits, interleaved, each through the path the CLI takes: load the
// skill, pick its image, prepare, run), and the size a skill image adds to
// the runner image.
//
//	go run ./bench/skilldeps -n 30
//
// The skill with dependencies asks for Debian's python3-tabulate and
// declares tabulate in a PEP 723 block, so the build needs the Debian
// archive but no Python package index.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends/dockerbackend"
	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

const script = `import json, sys
args = json.load(sys.stdin)
print(json.dumps({"hello": args["name"]}))
`

const pep723 = "# /// script\n# dependencies = [\"tabulate>=0.8\"]\n# ///\n"

func main() {
	n := flag.Int("n", 30, "cached runs per skill")
	keep := flag.Bool("keep", false, "keep the benchmark's skill image afterwards")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *n, *keep, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "skilldeps:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, n int, keep bool, out io.Writer) error {
	if n < 1 {
		return fmt.Errorf("-n must be at least 1")
	}
	root, err := os.MkdirTemp("", "sandboxrun-skilldeps-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	plain, err := writeSkill(root, "bench-plain", "", script)
	if err != nil {
		return err
	}
	deps, err := writeSkill(root, "bench-deps", "metadata:\n  system_packages: \"python3-tabulate\"\n", pep723+script)
	if err != nil {
		return err
	}
	d, err := docker.New(docker.WithVersion(sandboxrun.Version))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Ping(ctx); err != nil {
		return err
	}

	// A Service on this engine, as `sandboxrun run` builds one: skills
	// named by their folders.
	imgs := dockerbackend.Images()
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{root}, AllowSkillPaths: true, Runner: d, Images: imgs})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "sandboxrun skilldeps bench: runner %s\n\n", sandboxrun.RunnerImage())
	start := time.Now()
	img, err := svc.BuildImage(ctx, deps, sandboxrun.BuildOptions{NoCache: true})
	if err != nil {
		return err
	}
	first := time.Since(start)
	if !keep {
		defer func() {
			_, _ = imgs.Prune(context.WithoutCancel(ctx), func(l images.Listed) bool { return l.Ref != img.Ref }, false)
		}()
	}
	start = time.Now()
	again, err := svc.BuildImage(ctx, deps, sandboxrun.BuildOptions{})
	if err != nil {
		return err
	}
	if again.Built || again.ID != img.ID {
		return fmt.Errorf("second build was not a cache hit")
	}
	fmt.Fprintf(out, "first build of %s: %s (apt-get update and install, venv, pip)\n", img.Ref, first.Round(100*time.Millisecond))
	fmt.Fprintf(out, "build with nothing changed:  %s (no build)\n", time.Since(start).Round(time.Millisecond))

	added, err := addedSize(ctx, imgs, img.Ref)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "size added to the runner:    %.1f MiB\n\n", float64(added)/(1<<20))

	methods := []struct {
		name string
		dir  string
	}{{"no dependencies (runner image)", plain}, {"with dependencies (skill image)", deps}}
	for _, m := range methods { // warm caches; not counted
		for range 2 {
			if _, err := once(ctx, svc, m.dir); err != nil {
				return err
			}
		}
	}
	lat := make([][]time.Duration, len(methods))
	for i := range n {
		for j := range methods {
			k := (i + j) % len(methods) // alternate which goes first
			dur, err := once(ctx, svc, methods[k].dir)
			if err != nil {
				return err
			}
			lat[k] = append(lat[k], dur)
		}
	}
	fmt.Fprintf(out, "cached run latency, %d interleaved runs each (load skill, pick image, prepare, run):\n", n)
	for i, m := range methods {
		fmt.Fprintf(out, "  %-33s p50 %7s  p95 %7s\n", m.name, stats.MS(stats.Percentile(lat[i], 50)), stats.MS(stats.Percentile(lat[i], 95)))
	}
	fmt.Fprintf(out, "  p50 ratio with/without dependencies: %.3f (goal <= 1.05)\n",
		float64(stats.Percentile(lat[1], 50))/float64(stats.Percentile(lat[0], 50)))
	return nil
}

// once runs the skill's script the way `sandboxrun run` does (load the
// skill, plan, find the image, run) and returns the wall time.
func once(ctx context.Context, svc *sandboxrun.Service, dir string) (time.Duration, error) {
	start := time.Now()
	res, err := svc.RunScript(ctx, dir, "scripts/hello.py", sandboxrun.Request{Args: []byte(`{"name": "bench"}`), NoBuild: true})
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	if !res.Success {
		return 0, fmt.Errorf("run failed: %s: %s", res.Error, res.Stderr)
	}
	return elapsed, nil
}

func addedSize(ctx context.Context, imgs *images.Client, ref string) (int64, error) {
	list, err := imgs.List(ctx)
	if err != nil {
		return 0, err
	}
	var skillSize, runnerSize int64
	for _, l := range list {
		if slices.Contains(l.Tags, ref) {
			skillSize = l.Size
		}
		if slices.Contains(l.Tags, sandboxrun.RunnerImage()) {
			runnerSize = l.Size
		}
	}
	if skillSize == 0 || runnerSize == 0 {
		return 0, fmt.Errorf("%s or %s not listed", ref, sandboxrun.RunnerImage())
	}
	return skillSize - runnerSize, nil
}

// writeSkill writes a skill the sandbox user can read.
func writeSkill(root, name, front, hello string) (string, error) {
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil { //nolint:gosec // read by the sandbox user
		return "", err
	}
	for _, p := range []string{root, dir, filepath.Join(dir, "scripts")} {
		if err := os.Chmod(p, 0o755); err != nil { //nolint:gosec // read by the sandbox user
			return "", err
		}
	}
	md := "---\nname: " + name + "\ndescription: Benchmark skill " + name + ".\n" + front + "---\nBody.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil { //nolint:gosec // read by the sandbox user
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "hello.py"), []byte(hello), 0o644); err != nil { //nolint:gosec // read by the sandbox user
		return "", err
	}
	return dir, nil
}
