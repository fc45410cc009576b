// Command tenants measures fair share: two tokens against a real `sandboxrun
// serve` on loopback, one flooding at 8× the server's capacity (8 callers
// per slot, each calling again as soon as it is answered, 100 ms after a
// 429), the other calling once a second (waiting for each answer, as an
// agent does). It prints the quiet token's latency (p50, p99,
// max) and refusals with fair share on and off, in the same run, one server
// after the other. Traffic goes to loopback only.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
	"github.com/sandboxrun/sandboxrun/internal/testserve"
)

const (
	quietToken = "bench-quiet-token-0123456789abcdef"
	floodToken = "bench-flood-token-0123456789abcdef"
)

// options are the bench's flags.
type options struct {
	bin       string
	running   int
	queued    int
	queueWait time.Duration
	calls     int
	work      time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/sandboxrun", "the sandboxrun binary")
	flag.IntVar(&o.running, "running", 2, "serve --max-running: the server's capacity")
	flag.IntVar(&o.queued, "queued", 8, "serve --max-queued")
	flag.DurationVar(&o.queueWait, "queue-wait", 30*time.Second, "serve --queue-wait")
	flag.IntVar(&o.calls, "calls", 20, "the quiet token's calls, one a second")
	flag.DurationVar(&o.work, "work", 300*time.Millisecond, "how long each run's script sleeps")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/tenants:", err)
		os.Exit(1)
	}
}

// row is one server's figures.
type row struct {
	fair         bool
	quiet        []time.Duration // answered 200
	quietRefused int
	quietFailed  int
	flood        map[int]int
}

func run(o options) error {
	tmp, err := os.MkdirTemp("", "sandboxrun-tenants-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "skills")
	if err := writeSkill(root); err != nil {
		return err
	}
	tokens := filepath.Join(tmp, "tokens")
	if err := os.WriteFile(tokens, []byte("quiet "+quietToken+"\nflood "+floodToken+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Printf("capacity %d runs, queue %d, queue wait %s; flood: %d callers (8x); quiet: %d calls, one a second, each awaited; each run sleeps %s\n",
		o.running, o.queued, o.queueWait, 8*o.running, o.calls, o.work)
	var rows []row
	for _, fair := range []bool{true, false} {
		r, err := measure(o, tmp, root, tokens, fair)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAIR SHARE\tQUIET OK\tQUIET 429\tQUIET FAILED\tQUIET P50\tQUIET P99\tQUIET MAX\tFLOOD OK\tFLOOD 429")
	for _, r := range rows {
		p50, p99, mx := "-", "-", "-"
		if len(r.quiet) > 0 {
			p50, p99, mx = stats.MS(stats.Percentile(r.quiet, 50)), stats.MS(stats.Percentile(r.quiet, 99)), stats.MS(stats.Percentile(r.quiet, 100))
		}
		fmt.Fprintf(tw, "%t\t%d\t%d\t%d\t%s\t%s\t%s\t%d\t%d\n", r.fair, len(r.quiet), r.quietRefused, r.quietFailed, p50, p99, mx,
			r.flood[http.StatusOK], r.flood[http.StatusTooManyRequests])
	}
	return tw.Flush()
}

// measure starts a server with fair share on or off, floods it and times
// the quiet token's calls.
func measure(o options, tmp, root, tokens string, fair bool) (row, error) {
	pol := filepath.Join(tmp, fmt.Sprintf("policy-%t.yaml", fair))
	if err := os.WriteFile(pol, []byte(fmt.Sprintf("tenants:\n  fair_share: %t\n", fair)), 0o600); err != nil {
		return row{}, err
	}
	srv, err := testserve.Start(testserve.Options{Bin: o.bin, Token: quietToken,
		Args: []string{"--skills", root, "--policy", pol, "serve", "--tokens", tokens, "--warm-pool", "0",
			"--max-running", fmt.Sprint(o.running), "--max-queued", fmt.Sprint(o.queued), "--queue-wait", o.queueWait.String()}})
	if err != nil {
		return row{}, err
	}
	defer srv.Stop()
	body := fmt.Sprintf(`{"script": "scripts/work.py", "args": {"sleep": %g}}`, o.work.Seconds())
	url := srv.URL + "/v1/skills/bench-tenants/run"
	// One run first, so the image lookups are not in the figures.
	if status := call(url, quietToken, body); status != http.StatusOK {
		return row{}, fmt.Errorf("the first run answered %d: %s", status, srv.Log)
	}

	r := row{fair: fair, flood: map[int]int{}}
	var mu sync.Mutex
	stop := make(chan struct{})
	var flood sync.WaitGroup
	for range 8 * o.running {
		flood.Add(1)
		go func() {
			defer flood.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				status := call(url, floodToken, body)
				mu.Lock()
				r.flood[status]++
				mu.Unlock()
				if status != http.StatusOK {
					time.Sleep(100 * time.Millisecond) // a flood retries almost at once
				}
			}
		}()
	}
	time.Sleep(2 * time.Second) // the flood takes the slots and the queue
	// The quiet token is an agent that calls once a second and waits for
	// each answer: a call that took longer is followed by the next at once.
	for range o.calls {
		start := time.Now()
		status := call(url, quietToken, body)
		took := time.Since(start)
		switch status {
		case http.StatusOK:
			r.quiet = append(r.quiet, took)
		case http.StatusTooManyRequests:
			r.quietRefused++
		default:
			r.quietFailed++
		}
		time.Sleep(time.Second - min(took, time.Second))
	}
	close(stop)
	flood.Wait()
	return r, nil
}

// call makes one run as token and returns its status (-1: no answer).
func call(url, token, body string) int {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return -1
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func writeSkill(root string) error {
	dir := filepath.Join(root, "bench-tenants")
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil { //nolint:gosec // read by the sandbox user
		return err
	}
	md := "---\nname: bench-tenants\ndescription: Sleeps as long as asked. Use it to measure fair share.\n---\nRun scripts/work.py.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil { //nolint:gosec // read by the sandbox user
		return err
	}
	py := "import json, sys, time\ntime.sleep(json.load(sys.stdin).get('sleep', 0))\nprint('done')\n"
	if err := os.WriteFile(filepath.Join(dir, "scripts", "work.py"), []byte(py), 0o644); err != nil { //nolint:gosec // read by the sandbox user
		return err
	}
	for _, d := range []string{root, dir, filepath.Join(dir, "scripts")} {
		if err := os.Chmod(d, 0o755); err != nil { //nolint:gosec // read by the sandbox user
			return err
		}
	}
	return nil
}
