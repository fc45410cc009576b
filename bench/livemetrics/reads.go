package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
	"github.com/sandboxrun/sandboxrun/sandbox/cgroup"
)

// timeReads starts a container that sleeps and times n reads of its use
// each way the Docker backend knows: the cgroup's files (when this host
// has them) and the engine's one-shot stats.
func timeReads(ctx context.Context, n int) error {
	out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--rm", "--network", "none",
		"--label", "sandboxrun.bench=livemetrics", "--entrypoint", "sleep", sandboxrun.RunnerImage(), "3600").Output()
	if err != nil {
		return fmt.Errorf("start a container to read: %w", err)
	}
	id := strings.TrimSpace(string(out))
	defer func() { _ = exec.Command("docker", "rm", "-f", id).Run() }()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }()

	// A stats read may take a second: fewer of them.
	statsN := min(n, 20)
	fmt.Printf("\none read of a running container's use (%d through the cgroup, %d through the stats):\n", n, statsN)
	if r, err := cgroup.Find(cgroup.Root, "docker/"+id, "system.slice/docker-"+id+".scope"); err != nil {
		fmt.Printf("%-14s %v\n", "cgroup files", errNoCgroup)
	} else {
		ds, err := timeN(n, func() error { _, err := r.Read(); return err })
		if err != nil {
			return err
		}
		printReads("cgroup files", ds)
	}
	ds, err := timeN(statsN, func() error {
		resp, err := cli.ContainerStatsOneShot(ctx, id)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var st container.StatsResponse
		return json.NewDecoder(resp.Body).Decode(&st)
	})
	if err != nil {
		return err
	}
	printReads("stats one-shot", ds)
	return nil
}

func timeN(n int, read func() error) ([]time.Duration, error) {
	ds := make([]time.Duration, 0, n)
	for range n {
		began := time.Now()
		if err := read(); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(began))
	}
	return ds, nil
}

func printReads(way string, ds []time.Duration) {
	fmt.Printf("%-14s p50 %8s  p95 %8s\n", way, stats.Percentile(ds, 50).Round(time.Microsecond), stats.Percentile(ds, 95).Round(time.Microsecond))
}
