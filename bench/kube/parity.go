package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
	"github.com/sandboxrun/sandboxrun/egress"
	"github.com/sandboxrun/sandboxrun/internal/egressrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/session"
)

// The parity tables: what the egress proxy and a session cost on each
// backend, cold (no pool), in the same run. On Docker the proxy's socket
// and the workspace's volume are mounted; on Kubernetes both travel over
// the run's attach stream. Traffic goes to a server of this process on
// 127.0.0.1, which the bench's egress policy allows by CIDR.

// downloadBytes is the size of the download through the proxy.
const downloadBytes = 50 << 20

// egressScript fetches each URL of argv through the proxy variables and
// prints how long each took, in ms, and the bytes read.
const egressScript = `import json, ssl, sys, time, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[1])
out = []
for u in sys.argv[2:]:
    t = time.monotonic()
    with urllib.request.urlopen(u, timeout=60, context=ctx) as r:
        n = 0
        while True:
            b = r.read(1 << 20)
            if not b:
                break
            n += len(b)
    out.append({"ms": (time.monotonic() - t) * 1000, "bytes": n})
print(json.dumps(out))
`

// parity prints both tables for the cold rows.
func parity(ctx context.Context, rows []row, n int, out io.Writer) error {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Length", fmt.Sprint(downloadBytes))
			_, _ = io.CopyN(w, zeros{}, downloadBytes)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	dir, err := os.MkdirTemp("", "bench-parity-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // the sandbox user reads the skill
		return err
	}
	if err := writeSkill(dir, srv.Certificate().Raw); err != nil {
		return err
	}

	fmt.Fprintf(out, "\nthe egress proxy: one HTTPS request to an allowed host (p50 of %d runs, next to the same run without it), and a %d MiB download\n", n, downloadBytes>>20)
	fmt.Fprintf(out, "%-11s %10s %10s %10s %12s %10s\n", "backend", "plain run", "with GET", "GET alone", "50 MiB", "MiB/s")
	for _, r := range rows {
		if r.pool != "off" {
			continue
		}
		if err := egressRow(ctx, r, dir, port, n, out); err != nil {
			return fmt.Errorf("%s egress: %w", r.backend, err)
		}
	}
	fmt.Fprintf(out, "\na run in a writable session workspace (p50 of %d runs; the script writes one small file)\n", n)
	fmt.Fprintf(out, "%-11s %10s %10s %10s %10s\n", "backend", "no session", "0 MiB", "10 MiB", "100 MiB")
	for _, r := range rows {
		if r.pool != "off" {
			continue
		}
		if err := sessionRow(ctx, r, dir, n, out); err != nil {
			return fmt.Errorf("%s sessions: %w", r.backend, err)
		}
	}
	return nil
}

func writeSkill(dir string, cert []byte) error {
	pemText := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert})
	return errors.Join(
		os.MkdirAll(filepath.Join(dir, "scripts"), 0o755),                                    //nolint:gosec // as above
		os.WriteFile(filepath.Join(dir, "scripts", "fetch.py"), []byte(egressScript), 0o644), //nolint:gosec // as above
		os.WriteFile(filepath.Join(dir, "scripts", "ca.pem"), pemText, 0o644),                //nolint:gosec // as above
		os.WriteFile(filepath.Join(dir, "scripts", "touch.py"), []byte(touchScript), 0o644),  //nolint:gosec // as above
		os.WriteFile(filepath.Join(dir, "scripts", "hello.py"), []byte(script), 0o644),       //nolint:gosec // as above
	)
}

const touchScript = `open("note.txt", "w").write("x")
print("{}")
`

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func egressRow(ctx context.Context, r row, dir, port string, n int, out io.Writer) error {
	pr, err := r.open()
	if err != nil {
		return err
	}
	defer func() { _ = pr.Close() }()
	er := egressrun.Runner{Runner: pr, Options: []egress.Option{egress.WithResolver(egress.HostTable{"example.com": "127.0.0.1"})}}
	lim := limits()
	lim.Egress = &policy.Egress{Allow: []string{"example.com:" + port}, AllowCIDRs: []string{"127.0.0.1/32"},
		MaxConnections: 50, MaxBytes: 2 * downloadBytes, IdleTimeoutSec: 60}
	caIn := "/skills/bench/scripts/ca.pem"
	base := "https://example.com:" + port
	spec := func(urls ...string) sandbox.Spec {
		return sandbox.Spec{Skill: "bench", SkillDir: dir, Runtime: "python3",
			Argv: append([]string{"python3", "/skills/bench/scripts/fetch.py", caIn}, urls...), Limits: lim}
	}
	plain := make([]time.Duration, 0, n)
	with := make([]time.Duration, 0, n)
	inside := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if err := once(ctx, pr, dir); err != nil {
			return err
		}
		plain = append(plain, time.Since(t))
		t = time.Now()
		res, err := er.Run(ctx, spec(base+"/small"))
		if err := runOK(res, err); err != nil {
			return err
		}
		with = append(with, time.Since(t))
		got, err := fetched(res)
		if err != nil {
			return err
		}
		inside = append(inside, got[0].ms)
	}
	res, err := er.Run(ctx, spec(base+"/big"))
	if err := runOK(res, err); err != nil {
		return err
	}
	big, err := fetched(res)
	if err != nil {
		return err
	}
	if big[0].bytes != downloadBytes {
		return fmt.Errorf("the download read %d bytes of %d", big[0].bytes, downloadBytes)
	}
	fmt.Fprintf(out, "%-11s %10s %10s %10s %12s %10.1f\n", r.backend, stats.MS(stats.Percentile(plain, 50)), stats.MS(stats.Percentile(with, 50)),
		stats.MS(stats.Percentile(inside, 50)), stats.MS(big[0].ms), float64(downloadBytes>>20)/big[0].ms.Seconds())
	return nil
}

type fetch struct {
	ms    time.Duration
	bytes int64
}

func fetched(res *sandbox.Result) ([]fetch, error) {
	var raw []struct {
		MS    float64 `json:"ms"`
		Bytes int64   `json:"bytes"`
	}
	if err := json.Unmarshal(res.Output, &raw); err != nil {
		return nil, fmt.Errorf("script output %q: %w", res.Stdout, err)
	}
	out := make([]fetch, len(raw))
	for i, r := range raw {
		out[i] = fetch{ms: time.Duration(r.MS * float64(time.Millisecond)), bytes: r.Bytes}
	}
	return out, nil
}

func runOK(res *sandbox.Result, err error) error {
	switch {
	case err != nil:
		return err
	case !res.Success:
		return fmt.Errorf("run failed: %s %s", res.Error, res.Stderr)
	}
	return nil
}

func sessionRow(ctx context.Context, r row, dir string, n int, out io.Writer) error {
	pr, err := r.open()
	if err != nil {
		return err
	}
	defer func() { _ = pr.Close() }()
	cells := []string{}
	plain := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if err := once(ctx, pr, dir); err != nil {
			return err
		}
		plain = append(plain, time.Since(t))
	}
	cells = append(cells, stats.MS(stats.Percentile(plain, 50)))
	for _, mib := range []int64{0, 10, 100} {
		ws, err := workspaceOf(mib)
		if err != nil {
			return err
		}
		lat, err := sessionRuns(ctx, pr, dir, ws, mib, n)
		os.RemoveAll(ws)
		if err != nil {
			return fmt.Errorf("%d MiB: %w", mib, err)
		}
		cells = append(cells, stats.MS(stats.Percentile(lat, 50)))
	}
	fmt.Fprintf(out, "%-11s %10s %10s %10s %10s\n", r.backend, cells[0], cells[1], cells[2], cells[3])
	return nil
}

func sessionRuns(ctx context.Context, pr sandbox.Runner, dir, ws string, mib int64, n int) ([]time.Duration, error) {
	f, err := session.OpenFolder(ws, session.Limits{}, true)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	lim := limits()
	lim.MemoryBytes = 256<<20 + mib<<20 // the workspace's tmpfs counts against it
	lim.WorkspaceWriteBytes = 64 << 20
	lat := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		res, err := pr.Run(ctx, sandbox.Spec{Skill: "bench", SkillDir: dir, Runtime: "python3",
			Argv: []string{"python3", "/skills/bench/scripts/touch.py"}, Workspace: ws, WorkspaceWritable: true, Changes: f, Limits: lim})
		if err := runOK(res, err); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t))
	}
	return lat, nil
}

// workspaceOf is a folder holding mib MiB in 1 MiB files of random bytes.
func workspaceOf(mib int64) (string, error) {
	ws, err := os.MkdirTemp("", "bench-ws-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(ws, 0o755); err != nil { //nolint:gosec // the sandbox user reads it
		return "", err
	}
	buf := make([]byte, 1<<20)
	for i := range mib {
		_, _ = rand.Read(buf)
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%03d.bin", i)), buf, 0o644); err != nil { //nolint:gosec // as above
			return "", err
		}
	}
	return ws, nil
}
