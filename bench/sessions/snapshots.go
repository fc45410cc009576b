package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxrun/sandboxrun/bench/internal/stats"
)

// snapshots times a snapshot, a restore and a fork of session id (of size
// MiB), and the disk each adds under the sessions root (blocks of distinct
// files: hard links share theirs).
func snapshots(s *server, id string, size int) error {
	fmt.Printf("\n%-34s %8s %12s\n", fmt.Sprintf("workspace of %d MiB", size), "time", "disk added")
	step := func(name, method, path, body string) (string, error) {
		before := diskUsage(s.sessions)
		start := time.Now()
		out, err := s.call(method, path, body)
		d := time.Since(start)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("%-34s %8s %12s\n", name, stats.MS(d), fmt.Sprintf("%.1f MiB", float64(diskUsage(s.sessions)-before)/mib))
		var v struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(out, &v)
		return v.ID, nil
	}
	snap, err := step("snapshot", "POST", "/v1/sessions/"+id+"/snapshots", `{"label": "bench"}`)
	if err != nil {
		return err
	}
	// A run changes a file and adds one, then the snapshot is restored.
	if err := s.run(id); err != nil {
		return err
	}
	if _, err := step("restore", "POST", "/v1/sessions/"+id+"/restore", `{"snapshot": "`+snap+`"}`); err != nil {
		return err
	}
	if _, err := step("fork of the session", "POST", "/v1/sessions", `{"from": {"session": "`+id+`"}}`); err != nil {
		return err
	}
	_, err = step("fork of the snapshot", "POST", "/v1/sessions", `{"from": {"session": "`+id+`", "snapshot": "`+snap+`"}}`)
	return err
}

// call makes one JSON call and returns the body of a 2xx answer.
func (s *server) call(method, path, body string) ([]byte, error) {
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, out)
	}
	return out, nil
}

// diskUsage is the bytes of blocks the files under root take, each inode
// counted once.
func diskUsage(root string) int64 {
	seen := map[uint64]bool{}
	var total int64
	_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // gone meanwhile
		}
		fi, err := d.Info()
		if err != nil {
			return nil //nolint:nilerr // gone meanwhile
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && !seen[st.Ino] {
			seen[st.Ino] = true
			total += st.Blocks * 512
		}
		return nil
	})
	return total
}
