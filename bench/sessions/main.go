// Command sessions measures what sessions cost an agent host, against a
// real `sandboxrun serve --sessions DIR` on loopback: the latency a session
// adds to a run (its workspace shared with the sandbox as a copy-on-write
// view, or copied where views are off, and its changes handed back),
// next to the same run without one, with workspaces of 0, 10, 100 and
// 1024 MiB; the time and the disk a snapshot, a restore and a fork of the
// largest take; and the throughput of putting and getting a 100 MiB file,
// alone and as a tar. Traffic goes to loopback only.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
	"github.com/sandboxrun/sandboxrun/internal/testserve"
)

const mib = 1 << 20

// script reads nothing and writes one small file when in a session, so
// the hand-back has a change to apply, as a typical step does.
const script = `import json, os, sys
args = json.load(sys.stdin)
if args.get("write"):
    open("out.json", "w").write(json.dumps(args))
print(json.dumps({"ok": True}))
`

func main() {
	n := flag.Int("n", 10, "runs per latency row")
	sizes := flag.String("sizes", "0,10,100,1024", "workspace sizes of the latency rows, MiB (the largest is snapshotted and forked)")
	reps := flag.Int("reps", 3, "transfers per throughput row (the median is printed)")
	bin := flag.String("bin", "bin/sandboxrun", "the sandboxrun binary")
	flag.Parse()
	if err := run(*bin, *n, *reps, *sizes); err != nil {
		fmt.Fprintln(os.Stderr, "bench/sessions:", err)
		os.Exit(1)
	}
}

func run(bin string, n, reps int, sizeList string) error {
	var sizes []int
	for _, f := range strings.Split(sizeList, ",") {
		var v int
		if _, err := fmt.Sscan(f, &v); err != nil {
			return fmt.Errorf("-sizes %q: give MiB as numbers separated by commas", sizeList)
		}
		sizes = append(sizes, v)
	}
	tmp, err := os.MkdirTemp("", "sandboxrun-sessions-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	root, err := writeSkill(tmp)
	if err != nil {
		return err
	}
	// Room for the largest workspace and its fork.
	pol := filepath.Join(tmp, "policy.yaml")
	if err := os.WriteFile(pol, []byte("sessions:\n  quota: 2Gi\n  max_total_bytes: 20Gi\n"), 0o600); err != nil {
		return err
	}
	srv, err := startServer(bin, root, filepath.Join(tmp, "sessions"), pol)
	if err != nil {
		return err
	}
	defer srv.stop()

	fmt.Printf("sessions bench: n=%d runs per row, trivial python script, server on loopback\n\n", n)
	fmt.Printf("%-34s %8s %8s %10s\n", "run", "p50", "p90", "p50 added")
	base, err := latency(n, func() error { return srv.run("") })
	if err != nil {
		return fmt.Errorf("run without a session: %w", err)
	}
	fmt.Printf("%-34s %8s %8s %10s\n", "no session", stats.MS(base[0]), stats.MS(base[1]), "")
	largest := ""
	for i, size := range sizes {
		id, err := srv.create()
		if err != nil {
			return err
		}
		// The workspace as an agent leaves it: files of 1 MiB.
		for i := range size {
			if _, err := srv.send("PUT", fmt.Sprintf("/v1/sessions/%s/files/data/part%04d.bin", id, i), "", bytes.NewReader(random(mib))); err != nil {
				return err
			}
		}
		rows := n
		if size >= 1024 {
			rows = max(3, n/3) // each run copies a GiB each way
		}
		name := fmt.Sprintf("session, workspace %d MiB", size)
		m, err := latency(rows, func() error { return srv.run(id) })
		if err != nil {
			fmt.Printf("%-34s failed: %v\n", name, err)
		} else {
			fmt.Printf("%-34s %8s %8s %10s\n", name, stats.MS(m[0]), stats.MS(m[1]), stats.MS(m[0]-base[0]))
		}
		if i == len(sizes)-1 {
			largest = id
			break
		}
		if _, err := srv.send("DELETE", "/v1/sessions/"+id, "", nil); err != nil {
			return err
		}
	}
	if err := snapshots(srv, largest, sizes[len(sizes)-1]); err != nil {
		return err
	}

	fmt.Printf("\n%-34s %8s %10s\n", "transfer of 100 MiB", "median", "MiB/s")
	id, err := srv.create()
	if err != nil {
		return err
	}
	big := random(100 * mib)
	var tarred bytes.Buffer
	tw := tar.NewWriter(&tarred)
	if err := tw.WriteHeader(&tar.Header{Name: "t/big.bin", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(big))}); err != nil {
		return err
	}
	if _, err := tw.Write(big); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	rows := []struct {
		name string
		f    func() (int64, error)
	}{
		{"PUT one file", func() (int64, error) {
			return srv.send("PUT", "/v1/sessions/"+id+"/files/big.bin", "", bytes.NewReader(big))
		}},
		{"GET one file", func() (int64, error) {
			return srv.send("GET", "/v1/sessions/"+id+"/files/big.bin", "", nil)
		}},
		{"PUT tar", func() (int64, error) {
			return srv.send("PUT", "/v1/sessions/"+id+"/files", "application/x-tar", bytes.NewReader(tarred.Bytes()))
		}},
		{"GET tar (workspace of 200 MiB)", func() (int64, error) {
			return srv.send("GET", "/v1/sessions/"+id+"/files", "accept:application/x-tar", nil)
		}},
	}
	for _, r := range rows {
		var ds []time.Duration
		var bytesMoved int64
		for range reps {
			start := time.Now()
			got, err := r.f()
			if err != nil {
				return fmt.Errorf("%s: %w", r.name, err)
			}
			ds = append(ds, time.Since(start))
			bytesMoved = max(got, int64(len(big)))
		}
		d := stats.Percentile(ds, 50)
		fmt.Printf("%-34s %8s %10.0f\n", r.name, stats.MS(d), float64(bytesMoved)/mib/d.Seconds())
	}
	return nil
}

// latency returns the p50 and p90 of n calls of f.
func latency(n int, f func() error) ([2]time.Duration, error) {
	var ds []time.Duration
	for range n {
		start := time.Now()
		if err := f(); err != nil {
			return [2]time.Duration{}, err
		}
		ds = append(ds, time.Since(start))
	}
	return [2]time.Duration{stats.Percentile(ds, 50), stats.Percentile(ds, 90)}, nil
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

type server struct {
	*testserve.Server
	url      string
	client   *http.Client
	sessions string
}

func startServer(bin, root, sessions, policy string) (*server, error) {
	srv, err := testserve.Start(testserve.Options{Bin: bin,
		Args: []string{"--skills", root, "--policy", policy, "serve", "--sessions", sessions}})
	if err != nil {
		return nil, err
	}
	s := &server{Server: srv, url: srv.URL, client: &http.Client{}, sessions: sessions}
	// One run first, so the image lookups are not in the figures.
	return s, s.run("")
}

func (s *server) stop() { s.Stop() }

// send makes one call and returns the bytes of the answer's body; a status
// that is not 2xx is an error. A media type "accept:X" is sent as Accept,
// any other as Content-Type.
func (s *server) send(method, path, media string, body io.Reader) (int64, error) {
	req, err := http.NewRequest(method, s.url+path, body)
	if err != nil {
		return 0, err
	}
	if accept, ok := strings.CutPrefix(media, "accept:"); ok {
		req.Header.Set("Accept", accept)
	} else if media != "" {
		req.Header.Set("Content-Type", media)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, b)
	}
	return io.Copy(io.Discard, resp.Body)
}

func (s *server) create() (string, error) {
	req, err := http.NewRequest("POST", s.url+"/v1/sessions", nil)
	if err != nil {
		return "", err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var info struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("create a session: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return "", fmt.Errorf("create a session: %w", err)
	}
	return info.ID, nil
}

// run runs the script, in session id unless it is "".
func (s *server) run(id string) error {
	body := map[string]any{"script": "scripts/step.py", "args": map[string]any{"write": id != ""}}
	if id != "" {
		body["session"] = id
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := s.client.Post(s.url+"/v1/skills/bench/run", "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var res struct {
		Success bool            `json:"success"`
		Files   json.RawMessage `json:"files"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(out, &res) != nil || !res.Success {
		return fmt.Errorf("status %d: %s", resp.StatusCode, out)
	}
	if id != "" && len(res.Files) == 0 {
		// A run in a session is handed back, which "files" shows, even
		// empty: without it the row would not measure a session.
		return fmt.Errorf("a run in session %s has no files in its Result: %s", id, out)
	}
	return nil
}

// writeSkill writes the bench skill readable by the sandbox user and
// returns its root.
func writeSkill(tmp string) (string, error) {
	root := filepath.Join(tmp, "skills")
	dir := filepath.Join(root, "bench", "scripts")
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // read by the sandbox user
		return "", err
	}
	for _, p := range []string{tmp, root, filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o755); err != nil { //nolint:gosec // read by the sandbox user
			return "", err
		}
	}
	md := "---\nname: bench\ndescription: Sessions benchmark skill.\nallowed-tools: Bash(python3:*)\nmetadata:\n  max_memory: \"512\"\n---\nBench.\n"
	if err := os.WriteFile(filepath.Join(root, "bench", "SKILL.md"), []byte(md), 0o644); err != nil { //nolint:gosec // read by the sandbox user
		return "", err
	}
	return root, os.WriteFile(filepath.Join(dir, "step.py"), []byte(script), 0o644) //nolint:gosec // read by the sandbox user
}
