package docker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/sandboxrun/sandboxrun/internal/userdir"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// hostsFile is the host file bind-mounted, read-only, at /etc/hosts in
// every sandbox (sandbox.Hosts).
//
// Why a bind mount: without network the engine builds no network sandbox
// (NetworkDisabled, see containerConfig) and so writes no hosts file; the
// container sees the empty file its init layer puts at /etc/hosts, which
// also hides whatever an image has there. ExtraHosts needs that network
// sandbox back, which is the slowest part of a start; sandbox-init runs
// unprivileged on a read-only root and cannot write /etc. A bind mount
// costs the start nothing measurable, is read-only to the script, and its
// source is a file sandboxrun writes with fixed content, never one of the
// host's own (the host's /etc/hosts would tell the sandbox about the
// host's network).
//
// The file lives in this user's private folder (userdir), is written once
// per process, and is written again when something (a temp cleaner)
// removed it, so a long-lived server keeps working.
type hostsFile struct {
	mu      sync.Mutex
	path    string
	checked bool // the file at path had our content once in this process
	dir     func() (string, error)
}

func newHostsFile() *hostsFile {
	return &hostsFile{dir: func() (string, error) { return userdir.Private("hosts") }}
}

const hostsFileName = "hosts"

// ensure returns the path of a file holding sandbox.Hosts, writing it when
// it is missing or, the first time in this process, different.
func (h *hostsFile) ensure() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.checked {
		if fi, err := os.Lstat(h.path); err == nil && fi.Mode().IsRegular() {
			return h.path, nil
		}
	}
	dir, err := h.dir()
	if err != nil {
		return "", fmt.Errorf("sandbox hosts file: %w", err)
	}
	path := filepath.Join(dir, hostsFileName)
	if cur, err := os.ReadFile(path); err != nil || !bytes.Equal(cur, []byte(sandbox.Hosts)) {
		if err := writeAtomically(path, []byte(sandbox.Hosts)); err != nil {
			return "", fmt.Errorf("sandbox hosts file: %w", err)
		}
	}
	h.path, h.checked = path, true
	return path, nil
}

// writeAtomically replaces path with data through a temporary file and a
// rename, so that another process starting a sandbox meanwhile mounts
// either the old file or the new one, never a half-written one.
func writeAtomically(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return err
	}
	// The sandbox user reads it through the mount.
	if err := os.Chmod(f.Name(), 0o644); err != nil { //nolint:gosec // world-readable on purpose: see above
		return err
	}
	return os.Rename(f.Name(), path)
}
