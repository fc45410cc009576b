package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// benchIdle is the idle window the default-pool rows give the server, so
// that the bench sees the pool empty itself; the default is 5 minutes.
const benchIdle = 10 * time.Second

// mcpStdio is `sandboxrun mcp` as an agent host starts it: a subprocess
// spoken to over its stdin and stdout, with its default flags.
type mcpStdio struct {
	cmd *exec.Cmd
	cs  *mcpsdk.ClientSession
}

func startMCP(bin, root string, args ...string) (*mcpStdio, error) {
	return startMCPWith(bin, root, nil, args...)
}

// startMCPWith starts `sandboxrun mcp` with global flags before the
// command (a policy file, say) and args after it.
func startMCPWith(bin, root string, globals []string, args ...string) (*mcpStdio, error) {
	argv := append(append([]string{"--skills", root}, globals...), "mcp")
	cmd := exec.Command(bin, append(argv, args...)...)
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("start sandboxrun mcp: %w", err)
	}
	return &mcpStdio{cmd: cmd, cs: cs}, nil
}

func (m *mcpStdio) run(ctx context.Context) error {
	res, err := m.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "run_skill_script", Arguments: map[string]any{
		"skill": "bench", "script": "scripts/hello.py", "args_json": `{"name": "bench"}`,
	}})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("run_skill_script: %v", res.Content)
	}
	return nil
}

func (m *mcpStdio) stop() { _ = m.cs.Close() }

// held is what the process pid holds between runs: its containers (warm
// ones, and runs being removed) and the memory they use, as `docker stats`
// reports it.
func held(pid int) (n int, mib float64, err error) {
	out, err := exec.Command("docker", "ps", "-q", "--filter", "label="+sandbox.LabelOwnerPID+"="+strconv.Itoa(pid)).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("docker ps: %w", err)
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return 0, 0, nil
	}
	out, err = exec.Command("docker", append([]string{"stats", "--no-stream", "--format", "{{.MemUsage}}"}, ids...)...).Output()
	if err != nil {
		return len(ids), 0, fmt.Errorf("docker stats: %w", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		used, _, _ := strings.Cut(line, " / ")
		mib += parseMiB(strings.TrimSpace(used))
	}
	return len(ids), mib, nil
}

// parseMiB reads docker's sizes ("12.5MiB", "900KiB", "1.2GiB", "0B").
func parseMiB(s string) float64 {
	for _, u := range []struct {
		suffix string
		mib    float64
	}{{"GiB", 1024}, {"MiB", 1}, {"KiB", 1.0 / 1024}, {"B", 1.0 / (1 << 20)}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0
			}
			return f * u.mib
		}
	}
	return 0
}

// idleCost prints what pid holds now, and again once the idle window has
// passed.
func idleCost(name string, pid int) {
	report := func(when string) {
		n, mib, err := held(pid)
		if err != nil {
			fmt.Printf("%-26s %s: %v\n", "", when, err)
			return
		}
		fmt.Printf("%-26s held %s: %d containers, %.1f MiB\n", "", when, n, mib)
	}
	time.Sleep(2 * time.Second) // the burst's refills and removals settle
	report("after the burst")
	time.Sleep(benchIdle + 3*time.Second)
	report(fmt.Sprintf("after the idle window (%s)", benchIdle))
}
