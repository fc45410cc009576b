package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// errChangesRefused: the host did not take the workspace's changes.
var errChangesRefused = errors.New("the host refused the workspace's changes")

// handBack sends what changed in the workspace since it was fetched and
// waits until the host has dealt with it, so that init (and with it the
// stream) ends only after.
func (w *workspaceTree) handBack(ch *channel) error {
	s, err := ch.open(frame.StreamWorkspaceOut)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	if err := writeLayer(s, w.dir, w.before); err != nil {
		return fmt.Errorf("send the workspace's changes: %w", err)
	}
	// Half-close: the host reads to the end, then answers.
	if err := s.Close(); err != nil {
		return fmt.Errorf("send the workspace's changes: %w", err)
	}
	_ = s.SetReadDeadline(time.Now().Add(frame.ChangesWait))
	var ack [1]byte
	if _, err := io.ReadFull(s, ack[:]); err != nil {
		return fmt.Errorf("wait for the host to take the workspace's changes: %w", err)
	}
	if ack[0] != frame.ChangesTaken {
		return errChangesRefused
	}
	return nil
}

// writeLayer writes dir's changes against before as a layer: entries
// created or modified (a folder only when new or its mode changed), and a
// whiteout for each deleted entry whose folder is still there. Names that
// a layer cannot carry (a whiteout's prefix) and entries that are neither
// folder, file nor symlink are left out.
func writeLayer(w io.Writer, dir string, before map[string]entryState) error {
	tw := tar.NewWriter(w)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // read only
	after, err := snapshotTree(dir)
	if err != nil {
		return err
	}
	for _, rel := range deletions(before, after) {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: path.Join(path.Dir(rel), whiteoutPrefix+path.Base(rel)), Mode: 0o600, ModTime: time.Now()}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(after))
	for rel := range after {
		names = append(names, rel)
	}
	slices.Sort(names) // a folder before what it holds
	for _, rel := range names {
		if strings.HasPrefix(path.Base(rel), whiteoutPrefix) {
			continue
		}
		a := after[rel]
		b, had := before[rel]
		if had && (a == b || (a.isDir() && b.isDir() && a.mode == b.mode)) {
			continue
		}
		if err := addEntry(tw, root, rel); err != nil {
			return err
		}
	}
	return tw.Close()
}

// deletions are the entries of before gone from after whose folder is
// still a folder in after (the workspace itself counts): deleting the
// topmost gone entry deletes what was under it.
func deletions(before, after map[string]entryState) []string {
	var out []string
	for rel := range before {
		if _, ok := after[rel]; ok {
			continue
		}
		parent := path.Dir(rel)
		if p, ok := after[parent]; parent != "." && (!ok || !p.isDir()) {
			continue
		}
		out = append(out, rel)
	}
	slices.Sort(out)
	return out
}

// addEntry writes the entry at rel, read through root.
func addEntry(tw *tar.Writer, root *os.Root, rel string) error {
	fi, err := root.Lstat(rel)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: rel, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime()}
	switch {
	case fi.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, rel+"/"
		return tw.WriteHeader(h)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := root.Readlink(rel)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, target
		return tw.WriteHeader(h)
	case fi.Mode().IsRegular():
		f, err := root.OpenFile(rel, os.O_RDONLY|syscallNoFollow, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		// The size is what the file holds now: a leftover process may
		// still be writing it, and the header must match the bytes.
		st, err := f.Stat()
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, st.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = io.CopyN(tw, f, st.Size())
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s shrank while it was read", filepath.FromSlash(rel))
		}
		return err
	}
	return nil
}
