package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"time"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/internal/layer"
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
// whiteout for each deleted entry whose folder is still there. The entries
// are read through an os.Root by layer.Writer.FromRoot, which leaves out
// what a layer cannot carry (a name with a whiteout's prefix; a fifo, a
// socket, a device).
func writeLayer(w io.Writer, dir string, before map[string]entryState) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // read only
	after, err := snapshotTree(dir)
	if err != nil {
		return err
	}
	lw := layer.NewWriter(w)
	for _, rel := range deletions(before, after) {
		if err := lw.Whiteout(rel); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(after))
	for rel := range after {
		names = append(names, rel)
	}
	slices.Sort(names) // a folder before what it holds
	for _, rel := range names {
		a := after[rel]
		b, had := before[rel]
		if had && (a == b || (a.isDir() && b.isDir() && a.mode == b.mode)) {
			continue
		}
		// The file's size is what it holds once open: a leftover process
		// may still be writing it, and the entry must match the bytes.
		if _, err := lw.FromRoot(root, rel); err != nil {
			return err
		}
	}
	return lw.Close()
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
