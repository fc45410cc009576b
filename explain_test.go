package sandboxrun_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/images"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// One plan answers both questions: for every skill × policy × request,
// what Explain says is what the run that follows asks of the engine
// (limits, network, image, argv, workspace), and a refusal is the same
// refusal, also where the engine's host (two CPUs, 4 GiB) cannot honour
// the limits. A recording engine stands in for Docker.
func TestExplainEqualsTheRun(t *testing.T) {
	ctx := context.Background()
	fetcher := tempSkill(t, "fetcher", []string{"metadata:", `  network_access: "true"`, `  allowed_domains: "api.example.com pypi.org"`},
		map[string]string{"scripts/get.py": "print(1)\n"})
	writer := tempSkill(t, "writer", []string{"allowed-tools: Write Read Bash(python3:*)"},
		map[string]string{"scripts/w.py": "print(1)\n"})
	greedy := tempSkill(t, "greedy", []string{"max_cpus: 4"}, map[string]string{"scripts/g.py": "print(1)\n"})
	roots := []string{"skills", filepath.Dir(fetcher.Dir), filepath.Dir(writer.Dir), filepath.Dir(greedy.Dir)}
	ws := t.TempDir()

	parse := func(name, src string) *policy.Operator {
		pol, err := policy.ParsePolicy(name, []byte(src))
		require.NoError(t, err)
		return pol
	}
	policies := map[string]*policy.Operator{
		"builtin": policy.BuiltinPolicy(),
		"clamping": parse("clamp.yaml", "on_exceed: clamp\nlimits:\n  memory: {max: 128Mi}\n  timeout: {default: 5s, max: 10s}\n  cpus: {max: 1}\n"+
			"workspace:\n  roots: [/srv/none]\n"),
		"refusing": parse("refuse.yaml", "limits:\n  memory: {max: 256Mi}\non_exceed: refuse\nnetwork: none\n"),
		"agent": parse("agent.yaml", "profile: documents\nlimits:\n  timeout: {default: 30s, max: 300s}\n  memory: {default: 512Mi, max: 2Gi}\n"+
			"network: declared\nworkspace:\n  write: declared\n  roots: ["+ws+"]\n"+
			"skills:\n  hello:\n    allowed-tools: Write\n    system_packages: [python3-yaml]\n"),
	}
	scripts := map[string]string{"hello": "scripts/echo.py", "csv-report": "scripts/report.py", "fetcher": "scripts/get.py", "writer": "scripts/w.py", "greedy": "scripts/g.py"}
	type action struct {
		name string
		a    func(skillName string) sandboxrun.Action
	}
	actions := []action{
		{"script", func(n string) sandboxrun.Action { return sandboxrun.Action{Script: scripts[n]} }},
		{"command", func(string) sandboxrun.Action {
			return sandboxrun.Action{Command: "python3 {baseDir}/scripts/x.py | echo done"}
		}},
		{"python", func(string) sandboxrun.Action { return sandboxrun.Action{Code: []byte("print(1)"), Python: true} }},
	}
	requests := map[string]sandboxrun.Request{
		"defaults":  {},
		"overrides": {Timeout: 7 * time.Second, MemoryMiB: 200, CPUs: 0.5, Argv: []string{"--x", "a b"}},
		"too much":  {MemoryMiB: 8192, Timeout: time.Hour},
		"workspace": {Workspace: ws},
		"narrowed":  {AllowDomains: []string{"pypi.org"}},
		"image":     {Image: "example/other:1"},
		"bad env":   {Env: map[string]string{"PATH": "/evil"}},
		"3 cpus":    {CPUs: 3},
	}

	var ran, refusedN, clamped, egress, skillImages, profiles, beyondHost int
	for polName, pol := range policies {
		svc, eng := newService(t, sandboxrun.Config{SkillRoots: roots, Policy: pol, AllowSkillPaths: false})
		eng.host = sandbox.HostCapacity{CPUs: 2, MemoryBytes: 4 << 30}
		eng.images[sandboxrun.RunnerImage()+"-documents"] = "sha256:documents"
		for skillName := range scripts {
			sk, err := svc.Skill(skillName)
			require.NoError(t, err)
			// The skill image the run will look for, on the runner this
			// policy picks; the engine has it, so nothing is built.
			if opts, err := sandboxrun.SkillImageOptions(sk, sandboxrun.BuildOptions{Policy: pol}); err == nil {
				tag, err := images.SkillTag(opts, eng.images[opts.Runner])
				require.NoError(t, err)
				eng.images[tag] = "sha256:" + skillName
			}
			for _, act := range actions {
				for reqName, req := range requests {
					name := fmt.Sprintf("%s/%s/%s/%s", polName, skillName, act.name, reqName)
					a := act.a(skillName)
					t.Run(name, func(t *testing.T) {
						e, eerr := svc.Explain(ctx, skillName, a, req)
						before := len(eng.specs)
						_, rerr := run(ctx, svc, skillName, a, req)
						if eerr != nil {
							require.Error(t, rerr, "Explain refused, the run must too")
							require.Equal(t, eerr.Error(), rerr.Error())
							require.Equal(t, errors.Is(eerr, sandboxrun.ErrRefused), errors.Is(rerr, sandboxrun.ErrRefused))
							require.Equal(t, errors.Is(eerr, sandbox.ErrBeyondHost), errors.Is(rerr, sandbox.ErrBeyondHost))
							require.Len(t, eng.specs, before, "nothing reached the engine")
							refusedN++
							if errors.Is(eerr, sandbox.ErrBeyondHost) {
								require.True(t, e.Host.Checked)
								require.ErrorContains(t, eerr, "beyond what the engine's host offers")
								beyondHost++
							}
							return
						}
						require.NoError(t, rerr)
						require.True(t, e.Host.Checked, "the engine's host was asked")
						require.Len(t, eng.specs, before+1)
						spec := eng.specs[before]
						require.Equal(t, e.Limits, spec.Limits, "limits and network")
						require.Equal(t, e.Argv, spec.Argv)
						require.Equal(t, e.Workspace, spec.Workspace)
						require.Equal(t, e.WorkspaceWritable, spec.WorkspaceWritable)
						if e.SkillImage {
							require.Empty(t, e.Image)
							require.Equal(t, "sha256:"+skillName, eng.images[spec.Image], "the skill image built on %s", e.Runner)
							skillImages++
						} else {
							require.Equal(t, e.Image, spec.Image)
						}
						ran++
						if len(spec.Limits.Clamped) > 0 {
							clamped++
						}
						if spec.Limits.Egress != nil {
							egress++
						}
						if spec.Image == sandboxrun.RunnerImage()+"-documents" {
							profiles++
						}
					})
				}
			}
		}
	}
	// The table reaches every branch it is meant to compare.
	for what, n := range map[string]int{"ran": ran, "refused": refusedN, "clamped": clamped, "egress": egress, "skill image": skillImages, "profile": profiles, "beyond the host": beyondHost} {
		require.Positive(t, n, what)
	}
}

// run runs a as the front ends do.
func run(ctx context.Context, svc *sandboxrun.Service, skillName string, a sandboxrun.Action, req sandboxrun.Request) (*sandbox.Result, error) {
	switch {
	case a.Script != "":
		return svc.RunScript(ctx, skillName, a.Script, req)
	case a.Command != "":
		return svc.RunCommand(ctx, skillName, a.Command, req)
	default:
		return svc.RunPython(ctx, skillName, a.Code, req)
	}
}
