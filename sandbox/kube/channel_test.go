package kube

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// recordingApplier keeps the layer it was given.
type recordingApplier struct {
	layer []byte
	err   error
}

func (r *recordingApplier) ApplyChanges(_ context.Context, layer io.Reader) ([]sandbox.FileChange, error) {
	b, err := io.ReadAll(layer)
	if err != nil {
		return nil, err
	}
	r.layer = b
	return []sandbox.FileChange{{Path: "out.txt", Change: sandbox.FileCreated}}, r.err
}

// initSide is the test's stand-in for sandbox-init's half of the channel:
// a yamux client over pipes joined to the host's end.
func initSide(t *testing.T, c *hostChannel) *yamux.Session {
	t.Helper()
	toInit, fromHost := io.Pipe() // the attach's stdin
	require.NoError(t, c.start(fromHost))
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = false
	cfg.LogOutput = io.Discard
	sess, err := yamux.Client(channelConn{Reader: toInit, Writer: c.inW}, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = toInit.Close(); _ = sess.Close() })
	return sess
}

func openKind(t *testing.T, s *yamux.Session, k byte) net.Conn {
	t.Helper()
	st, err := s.Open()
	require.NoError(t, err)
	_, err = st.Write([]byte{k})
	require.NoError(t, err)
	return st
}

func TestChannelEgressGoesToTheRunsProxy(t *testing.T) {
	sock := filepath.Join(shortTemp(t), "p.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		_, _ = c.Write(append([]byte("proxy saw: "), b...))
	}()
	c := newHostChannel(&sandbox.Spec{EgressSocket: sock}, 16<<20, slog.New(slog.DiscardHandler))
	s := initSide(t, c)
	st := openKind(t, s, frame.StreamEgress)
	_, err = st.Write([]byte("CONNECT x:443"))
	require.NoError(t, err)
	require.NoError(t, st.Close()) // half-close
	got, err := io.ReadAll(st)
	require.NoError(t, err)
	require.Equal(t, "proxy saw: CONNECT x:443", string(got))
	_, err = c.close()
	require.NoError(t, err)
}

func TestChannelWithoutProxyEndsEgressStreams(t *testing.T) {
	c := newHostChannel(&sandbox.Spec{EgressSocket: filepath.Join(t.TempDir(), "gone.sock")}, 16<<20, slog.New(slog.DiscardHandler))
	s := initSide(t, c)
	st := openKind(t, s, frame.StreamEgress)
	got, err := io.ReadAll(st)
	require.NoError(t, err, "the stream just ends: no proxy, no way out")
	require.Empty(t, got)
	_, _ = c.close()
}

func TestChannelWorkspaceInAndChangesOut(t *testing.T) {
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "in.txt"), []byte("hello"), 0o644))
	app := &recordingApplier{}
	spec := &sandbox.Spec{Workspace: ws, WorkspaceWritable: true, Changes: app}
	spec.Limits.WorkspaceWriteBytes = 1 << 20
	c := newHostChannel(spec, 16<<20, slog.New(slog.DiscardHandler))
	s := initSide(t, c)

	in := openKind(t, s, frame.StreamWorkspaceIn)
	require.NoError(t, in.Close())
	tr := tar.NewReader(in)
	h, err := tr.Next()
	require.NoError(t, err)
	require.Equal(t, "in.txt", h.Name)
	require.Equal(t, sandbox.SandboxUID, h.Uid)
	// A second request for the files gets nothing.
	again := openKind(t, s, frame.StreamWorkspaceIn)
	b, _ := io.ReadAll(again)
	require.Empty(t, b)

	out := openKind(t, s, frame.StreamWorkspaceOut)
	_, err = out.Write([]byte("LAYER"))
	require.NoError(t, err)
	require.NoError(t, out.Close())
	c.report(true)
	var ack [1]byte
	_, err = io.ReadFull(out, ack[:])
	require.NoError(t, err)
	require.Equal(t, frame.ChangesTaken, ack[0])
	files, err := c.close()
	require.NoError(t, err)
	require.Equal(t, "LAYER", string(app.layer))
	require.Len(t, files, 1)
}

func TestChannelRefusesChangesWithoutAReport(t *testing.T) {
	app := &recordingApplier{}
	spec := &sandbox.Spec{Workspace: t.TempDir(), WorkspaceWritable: true, Changes: app}
	c := newHostChannel(spec, 16<<20, slog.New(slog.DiscardHandler))
	s := initSide(t, c)
	out := openKind(t, s, frame.StreamWorkspaceOut)
	_, _ = out.Write([]byte("LAYER"))
	_ = out.Close()
	c.report(false) // init could not run the job
	var ack [1]byte
	_, err := io.ReadFull(out, ack[:])
	require.NoError(t, err)
	require.Equal(t, frame.ChangesRefused, ack[0])
	files, err := c.close()
	require.NoError(t, err)
	require.Nil(t, files)
	require.Nil(t, app.layer, "nothing reached the workspace")
}

func TestChannelApplierFailureIsTheRunsError(t *testing.T) {
	app := &recordingApplier{err: errors.New("disk full")}
	spec := &sandbox.Spec{Workspace: t.TempDir(), WorkspaceWritable: true, Changes: app}
	c := newHostChannel(spec, 16<<20, slog.New(slog.DiscardHandler))
	s := initSide(t, c)
	out := openKind(t, s, frame.StreamWorkspaceOut)
	_ = out.Close()
	c.report(true)
	var ack [1]byte
	_, err := io.ReadFull(out, ack[:])
	require.NoError(t, err)
	require.Equal(t, frame.ChangesRefused, ack[0])
	_, err = c.close()
	require.ErrorContains(t, err, "changes to its workspace were not kept: disk full")
}

// shortTemp is a folder whose path fits a unix socket's name.
func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ch")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
