package engine

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// proxy is a stand-in for a run's egress proxy: it answers each
// connection with its name.
func proxy(t *testing.T, name string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(name))
			_ = c.Close()
		}
	}()
	return sock
}

// dial connects to the slot's socket as the sandbox would and reads all
// it gets.
func dial(t *testing.T, sock string) string {
	t.Helper()
	c, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	b, _ := io.ReadAll(c)
	return string(b)
}

func TestSlotReachesOnlyItsRunsProxy(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, []byte("the run's bundle"), 0o644))
	tmpl := sandbox.Spec{EgressSocket: "/not/this/run's", EgressCA: ca}
	s, err := newSlot(&tmpl)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(s.dir, slotSocket), tmpl.EgressSocket, "the sandbox binds the slot's socket")
	require.Equal(t, filepath.Join(s.dir, slotCA), tmpl.EgressCA)
	before, err := os.Stat(tmpl.EgressCA)
	require.NoError(t, err)

	require.Empty(t, dial(t, tmpl.EgressSocket), "before a run takes the sandbox, no way out")

	run := sandbox.Spec{EgressSocket: proxy(t, "proxy of the run"), EgressCA: ca}
	require.NoError(t, s.join(&run))
	require.Equal(t, "proxy of the run", dial(t, tmpl.EgressSocket))
	got, err := os.ReadFile(tmpl.EgressCA)
	require.NoError(t, err)
	require.Equal(t, "the run's bundle", string(got))
	after, err := os.Stat(tmpl.EgressCA)
	require.NoError(t, err)
	require.Equal(t, before.Sys().(*syscall.Stat_t).Ino, after.Sys().(*syscall.Stat_t).Ino,
		"written in place: the sandbox binds the file, not its name")

	require.NoError(t, os.Remove(run.EgressSocket)) // the proxy is gone
	require.Empty(t, dial(t, tmpl.EgressSocket), "a proxy that is gone leaves no way out")

	require.NoError(t, s.close())
	require.NoDirExists(t, s.dir)
}

// Every egress run keys alike, whatever its proxy; one that ends TLS keys
// apart.
func TestKeyedNamesEverySlotAlike(t *testing.T) {
	a := keyed(sandbox.Spec{EgressSocket: "/tmp/a/egress.sock"})
	b := keyed(sandbox.Spec{EgressSocket: "/tmp/b/egress.sock"})
	require.Equal(t, a, b)
	require.NotEqual(t, a, keyed(sandbox.Spec{EgressSocket: "/tmp/b/egress.sock", EgressCA: "/tmp/b/ca.pem"}))
	require.Equal(t, sandbox.Spec{}, keyed(sandbox.Spec{}), "a run without a proxy keys as it is")
}

// A slot folder of a process that is gone is reaped; one of this process,
// or one whose name says no owner, is kept.
func TestReapSlotsRemovesThoseOfGoneProcesses(t *testing.T) {
	root := t.TempDir()
	dead := filepath.Join(root, "sandboxrun-slot-999999999-1-abc")
	mine := filepath.Join(root, "sandboxrun-slot-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(sandbox.OwnerOf(os.Getpid(), "").Start, 10)+"-def")
	odd := filepath.Join(root, "sandboxrun-slot-xyz")
	for _, d := range []string{dead, mine, odd} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dead, "ca.pem"), nil, 0o644))
	gone, err := ReapSlots(root)
	require.NoError(t, err)
	require.Equal(t, []string{dead}, gone)
	require.NoDirExists(t, dead)
	require.DirExists(t, mine)
	require.DirExists(t, odd)
}
