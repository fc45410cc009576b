//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/testserve"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/docker"
)

// ownedBy lists the managed containers whose owner is pid, in any state.
func ownedBy(t *testing.T, pid int) []container.Summary {
	t.Helper()
	list, err := runner.Client().ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelManaged+"=true"), filters.Arg("label", sandbox.LabelOwnerPID+"="+strconv.Itoa(pid)))})
	require.NoError(t, err)
	return list
}

// TestFaultsKilledUnderLoad: clients upload, run and download in several
// sessions at once while serve is SIGKILLed at a random moment and
// restarted on the same folder, five times. After each restart, before any
// run: every acknowledged upload is byte for byte what was sent, nothing
// temporary is listed or on disk, every session is listed, and no container
// or workspace volume of the killed server is left (the new server reaps at
// start, with no run or /readyz to prompt it).
func TestFaultsKilledUnderLoad(t *testing.T) {
	// Serial (see main_test.go): it kills servers, whose sandboxes any
	// other sandboxrun process would reap as a dead owner's.
	dir := filepath.Join(t.TempDir(), "sessions")
	skill := sessSkill(t)
	root := sessSkillRoot(t, skill)
	start := func() *sessServer {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		srv := startServerProbe(t, "/healthz", nil, addr, root, "--sessions", dir, "--warm-pool", "0")
		return &sessServer{liveServer: srv, dir: dir, skill: skill}
	}
	srv := start()
	var ids []string
	for range 3 {
		ids = append(ids, srv.create(t, "").ID)
	}
	var mu sync.Mutex
	acked := map[string]map[string]string{} // session → path → sha256
	for _, id := range ids {
		acked[id] = map[string]string{}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 35))
	for round := range 5 {
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				load(ctx, srv, ids, fmt.Sprintf("r%d-w%d", round, w), &mu, acked)
			}()
		}
		time.Sleep(time.Duration(500+rng.IntN(3500)) * time.Millisecond)
		pid := srv.cmd.Process.Pid
		require.NoError(t, srv.cmd.Process.Kill())
		<-srv.done
		stop()
		wg.Wait()
		left := ownedBy(t, pid)
		var runIDs []string
		for _, c := range left {
			runIDs = append(runIDs, c.Labels[sandbox.LabelRunID])
		}
		n := 0
		for _, m := range acked {
			n += len(m)
		}
		t.Logf("round %d: killed with %d sandbox(es) running; %d uploads acknowledged so far", round+1, len(left), n)

		srv = start()
		require.ElementsMatch(t, ids, srv.ids(t), "round %d: every session survives", round+1)
		for _, id := range ids {
			byPath := entries(srv.list(t, id))
			for p := range byPath {
				require.False(t, strings.HasPrefix(filepath.Base(p), ".sandboxrun-"), "round %d: temporary %s listed", round+1, p)
			}
			for p, sum := range acked[id] {
				require.Contains(t, byPath, p, "round %d: acknowledged %s of %s listed", round+1, p, id)
				require.Equal(t, sum, sha(srv.get(t, id, p)), "round %d: acknowledged %s of %s intact", round+1, p, id)
			}
			require.Empty(t, tempNames(t, srv.workspace(id)), "round %d: nothing of an interrupted upload on disk", round+1)
		}
		require.Eventually(t, func() bool { return len(ownedBy(t, pid)) == 0 }, time.Minute, 100*time.Millisecond,
			"round %d: the killed server's sandboxes are reaped at start; left: %s", round+1, describeSandboxes())
		for _, id := range runIDs {
			require.Eventually(t, func() bool {
				_, err := runner.Client().VolumeInspect(context.Background(), "sandboxrun-ws-"+id)
				return cerrdefs.IsNotFound(err)
			}, time.Minute, 100*time.Millisecond, "round %d: the killed run's workspace volume is removed", round+1)
		}
		require.Eventually(t, func() bool { return len(viewMounts(t, pid)) == 0 }, time.Minute, 100*time.Millisecond,
			"round %d: the killed server's workspace views are unmounted at start; left: %v", round+1, viewMounts(t, pid))
	}
}

// viewMounts are the mounts and folders left of the workspace views of
// the server with pid (sandbox/docker/wsview.go).
func viewMounts(t *testing.T, pid int) []string {
	t.Helper()
	prefix := filepath.Join(docker.DefaultViewDir, strconv.Itoa(pid)+"-")
	info, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var left []string
	for _, line := range strings.Split(string(info), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], prefix) {
			left = append(left, f[4])
		}
	}
	dirs, err := filepath.Glob(prefix + "*")
	require.NoError(t, err)
	return append(left, dirs...)
}

// load uploads, downloads and runs in the sessions until ctx ends (the
// server dies), recording every upload the server acknowledged.
func load(ctx context.Context, srv *sessServer, ids []string, prefix string, mu *sync.Mutex, acked map[string]map[string]string) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(len(prefix))))
	for i := 0; ctx.Err() == nil; i++ {
		id := ids[rng.IntN(len(ids))]
		switch rng.IntN(4) {
		case 0, 1: // upload
			data := make([]byte, 64<<10+rng.IntN(2<<20))
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			p := fmt.Sprintf("%s-%d.bin", prefix, i)
			status, _ := testserve.Call(ctx, "PUT", srv.url+"/v1/sessions/"+id+"/files/"+p, data)
			if status == http.StatusCreated {
				mu.Lock()
				acked[id][p] = sha(data)
				mu.Unlock()
			}
		case 2: // download one acknowledged file
			mu.Lock()
			var p string
			for p = range acked[id] {
				break
			}
			mu.Unlock()
			if p != "" {
				_, _ = testserve.Call(ctx, "GET", srv.url+"/v1/sessions/"+id+"/files/"+p, nil)
			}
		case 3: // a run that writes
			body, _ := json.Marshal(map[string]any{"session": id, "timeout": 60,
				"code": fmt.Sprintf("import os\nos.makedirs('out', exist_ok=True)\nopen('out/%s-%d.txt', 'w').write('x' * 100000)\nprint('ok')", prefix, i)})
			_, _ = testserve.Call(ctx, "POST", srv.url+"/v1/skills/"+srv.skill+"/python", body)
		}
	}
}
