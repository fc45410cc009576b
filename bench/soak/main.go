// Command soak holds `sandboxrun serve` under mixed load for a while, as
// several agent hosts would: runs with and without a session, uploads,
// downloads, listings, explanations, sessions made and deleted, at a fixed
// concurrency. It prints p50/p99 per operation, answers by status, and the
// server's resident memory, open file descriptors and goroutines over
// time, so a leak shows as a slope. Traffic goes to loopback only. Not part
// of CI: `make soak` (SOAK_DURATION, default 10m).
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
	"github.com/sandboxrun/sandboxrun/internal/testserve"
)

func main() {
	bin := flag.String("bin", "bin/sandboxrun", "the sandboxrun binary")
	d := flag.Duration("d", 10*time.Minute, "how long to hold the load")
	c := flag.Int("c", 8, "clients at once")
	every := flag.Duration("sample", 30*time.Second, "how often to sample the server's memory, descriptors and goroutines")
	flag.Parse()
	if err := soak(*bin, *d, *c, *every); err != nil {
		fmt.Fprintln(os.Stderr, "bench/soak:", err)
		os.Exit(1)
	}
}

// ops are the operations and their weights in the mix.
var ops = []struct {
	name   string
	weight int
}{
	{"run", 3}, {"python+session", 2}, {"upload 64KiB", 3}, {"download", 2},
	{"list files", 2}, {"explain", 1}, {"create+delete session", 1},
}

// tally is what the clients measured.
type tally struct {
	mu       sync.Mutex
	lat      map[string][]time.Duration
	statuses map[string]map[int]int
}

func (t *tally) add(op string, d time.Duration, status int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if status >= 200 && status < 300 {
		t.lat[op] = append(t.lat[op], d)
	}
	if t.statuses[op] == nil {
		t.statuses[op] = map[int]int{}
	}
	t.statuses[op][status]++
}

// sample is the server's state at one moment.
type sample struct {
	at         time.Duration
	rssKiB     int64
	fds        int
	goroutines int
}

func soak(bin string, d time.Duration, clients int, every time.Duration) error {
	root, err := os.MkdirTemp("", "sandboxrun-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	skills, err := writeSkill(root)
	if err != nil {
		return err
	}
	srv, err := start(bin, skills, filepath.Join(root, "sessions"))
	if err != nil {
		return err
	}
	defer srv.stop()
	var ids []string
	for range clients {
		st, b := srv.call("POST", "/v1/sessions", nil)
		if st != http.StatusCreated {
			return fmt.Errorf("create a session: %d %s", st, b)
		}
		var info struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &info); err != nil {
			return err
		}
		ids = append(ids, info.ID)
		if st, b := srv.call("PUT", "/v1/sessions/"+info.ID+"/files/f0.bin", make([]byte, 64<<10)); st != http.StatusCreated {
			return fmt.Errorf("upload: %d %s", st, b)
		}
	}
	fmt.Printf("soak: %d clients for %s against serve (pid %d), load average %s\n", clients, d, srv.cmd.Process.Pid, loadavg())
	t := &tally{lat: map[string][]time.Duration{}, statuses: map[string]map[int]int{}}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var samples []sample
	samples = append(samples, srv.sample(0))
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client(ctx, srv, ids, i, t)
		}()
	}
	tick := time.NewTicker(every)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			s := srv.sample(time.Since(began))
			samples = append(samples, s)
			fmt.Printf("  %6s  RSS %6d KiB  fds %4d  goroutines %5d\n", s.at.Round(time.Second), s.rssKiB, s.fds, s.goroutines)
		}
	}
	tick.Stop()
	wg.Wait()
	time.Sleep(5 * time.Second) // finished runs' teardowns, idle connections
	samples = append(samples, srv.sample(time.Since(began)))
	report(t, samples, time.Since(began))
	return nil
}

func client(ctx context.Context, srv *server, ids []string, n int, t *tally) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(n))) //nolint:gosec // load generation, not secrets
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	data := make([]byte, 64<<10)
	for i := 0; ctx.Err() == nil; i++ {
		pick := rng.IntN(total)
		op := ops[0].name
		for _, o := range ops {
			if pick < o.weight {
				op = o.name
				break
			}
			pick -= o.weight
		}
		id := ids[rng.IntN(len(ids))]
		file := fmt.Sprintf("f%d.bin", rng.IntN(20))
		began := time.Now()
		var status int
		switch op {
		case "run":
			status, _ = srv.call("POST", "/v1/skills/soak/run", []byte(`{"script": "scripts/echo.py", "args": {"i": `+strconv.Itoa(i)+`}}`))
		case "python+session":
			status, _ = srv.call("POST", "/v1/skills/soak/python", []byte(`{"session": "`+id+`", "code": "import os\nopen('out.txt', 'w').write(str(len(os.listdir('.'))))"}`))
		case "upload 64KiB":
			for j := 0; j < len(data); j += 8 {
				binary.LittleEndian.PutUint64(data[j:], rng.Uint64())
			}
			status, _ = srv.call("PUT", "/v1/sessions/"+id+"/files/"+file, data)
		case "download":
			status, _ = srv.call("GET", "/v1/sessions/"+id+"/files/f0.bin", nil)
		case "list files":
			status, _ = srv.call("GET", "/v1/sessions/"+id+"/files", nil)
		case "explain":
			status, _ = srv.call("POST", "/v1/skills/soak/explain", []byte(`{"script": "scripts/echo.py"}`))
		case "create+delete session":
			var b []byte
			if status, b = srv.call("POST", "/v1/sessions", nil); status == http.StatusCreated {
				var info struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal(b, &info)
				status, _ = srv.call("DELETE", "/v1/sessions/"+info.ID, nil)
			}
		}
		if ctx.Err() != nil && status < 0 {
			return // cut by the end of the soak
		}
		t.add(op, time.Since(began), status)
	}
}

func report(t *tally, samples []sample, took time.Duration) {
	fmt.Printf("\n%-22s %8s %8s %8s  %s\n", "operation", "ok", "p50", "p99", "answers by status")
	names := make([]string, 0, len(ops))
	for _, o := range ops {
		names = append(names, o.name)
	}
	total := 0
	for _, op := range names {
		lat := t.lat[op]
		var codes []string
		for st, n := range t.statuses[op] {
			codes = append(codes, fmt.Sprintf("%d×%d", st, n))
			total += n
		}
		sort.Strings(codes)
		p50, p99 := "-", "-"
		if len(lat) > 0 {
			p50, p99 = stats.MS(stats.Percentile(lat, 50)), stats.MS(stats.Percentile(lat, 99))
		}
		fmt.Printf("%-22s %8d %8s %8s  %s\n", op, len(lat), p50, p99, strings.Join(codes, " "))
	}
	fmt.Printf("\n%d requests in %s (%.1f/s); load average %s\n", total, took.Round(time.Second), float64(total)/took.Seconds(), loadavg())
	first, last := samples[0], samples[len(samples)-1]
	fmt.Printf("server at start: RSS %d KiB, %d fds, %d goroutines; at the end (idle): RSS %d KiB, %d fds, %d goroutines\n",
		first.rssKiB, first.fds, first.goroutines, last.rssKiB, last.fds, last.goroutines)
}

type server struct {
	*testserve.Server
	url string
	cmd *exec.Cmd
}

func start(bin, skills, sessions string) (*server, error) {
	srv, err := testserve.Start(testserve.Options{Bin: bin, Args: []string{"--skills", skills, "serve", "--sessions", sessions},
		Stderr: io.Discard, Wait: time.Minute})
	if err != nil {
		return nil, fmt.Errorf("%w (is the runner image built? make images)", err)
	}
	return &server{Server: srv, url: srv.URL, cmd: srv.Cmd}, nil
}

func (s *server) stop() { s.Stop() }

// call sends one request and reads the whole answer; -1 when the exchange
// failed. A request in flight when the soak ends is let finish.
func (s *server) call(method, path string, body []byte) (int, []byte) {
	return testserve.Call(context.Background(), method, s.url+path, body)
}

// sample reads the server's memory and descriptors from /proc and its
// goroutines from /metrics.
func (s *server) sample(at time.Duration) sample {
	pid := s.cmd.Process.Pid
	out := sample{at: at}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				out.rssKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			}
		}
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		out.fds = len(fds)
	}
	if _, b := s.call("GET", "/metrics", nil); b != nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
				out.goroutines, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
	}
	return out
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// writeSkill writes the soak skill, readable by the sandbox user.
func writeSkill(root string) (string, error) {
	skills := filepath.Join(root, "skills")
	dir := filepath.Join(skills, "soak", "scripts")
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // read by the sandbox user
		return "", err
	}
	for _, p := range []string{root, skills, filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o755); err != nil { //nolint:gosec // read by the sandbox user
			return "", err
		}
	}
	md := "---\nname: soak\ndescription: Soak skill.\nallowed-tools: Bash(python3:*) Write\n---\nSoak.\n"
	if err := os.WriteFile(filepath.Join(skills, "soak", "SKILL.md"), []byte(md), 0o644); err != nil { //nolint:gosec // read by the sandbox user
		return "", err
	}
	echo := "import json, sys\nprint(json.dumps(json.load(sys.stdin)))\n"
	return skills, os.WriteFile(filepath.Join(dir, "echo.py"), []byte(echo), 0o644) //nolint:gosec // read by the sandbox user
}
