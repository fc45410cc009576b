package engine

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// A run's egress proxy listens on a socket of its own, made before the run
// (Spec.EgressSocket), and a sandbox binds the socket when it is created.
// A warm sandbox is created before its run, so it binds a slot instead: a
// folder of the engine's with a socket the engine listens on and, for a
// proxy that ends TLS, a trust bundle file. When a run takes the sandbox,
// the slot's socket is joined to the run's proxy and its bundle filled
// with the run's; each connection the sandbox makes then goes to that
// proxy and nowhere else. Before and after, a connection is closed at
// once: the sandbox has no way out, as when its proxy is gone.

// Names in a slot, and the template paths a driver's Plan keys: every
// warm egress sandbox binds its own slot, whose folder is no part of its
// configuration.
const (
	slotSocket = "egress.sock"
	slotCA     = "ca.pem"
	slotKeyDir = "/egress-slot"
)

// slot is one warm sandbox's stand-in for its run's egress proxy.
type slot struct {
	dir string
	ln  net.Listener

	mu       sync.Mutex
	upstream string // the run's proxy socket; "" until a run takes the sandbox
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
}

// keyed is tmpl as a driver's Plan keys it: an egress proxy's socket and
// bundle are those of a slot, whatever slot the sandbox gets.
func keyed(tmpl sandbox.Spec) sandbox.Spec {
	if tmpl.EgressSocket != "" {
		tmpl.EgressSocket = filepath.Join(slotKeyDir, slotSocket)
		if tmpl.EgressCA != "" {
			tmpl.EgressCA = filepath.Join(slotKeyDir, slotCA)
		}
	}
	return tmpl
}

// newSlot makes a slot for tmpl's egress proxy and points tmpl at it: its
// socket, owned by the sandbox user as the proxy's is, and an empty
// bundle when the proxy has one.
func newSlot(tmpl *sandbox.Spec) (*slot, error) {
	dir, err := os.MkdirTemp(slotRoot, slotPrefix+slotOwner()+"-")
	if err != nil {
		return nil, fmt.Errorf("make an egress slot: %w", err)
	}
	s := &slot{dir: dir, conns: map[net.Conn]struct{}{}}
	fail := func(err error) (*slot, error) {
		return nil, errors.Join(fmt.Errorf("make an egress slot: %w", err), s.close())
	}
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // the engine binds its files for the sandbox user
		return fail(err)
	}
	sock := filepath.Join(dir, slotSocket)
	if s.ln, err = net.Listen("unix", sock); err != nil {
		return fail(err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		return fail(err)
	}
	if os.Geteuid() == 0 {
		uid, gid := sandbox.UserIDs()
		if err := os.Lchown(sock, uid, gid); err != nil {
			return fail(err)
		}
	}
	tmpl.EgressSocket = sock
	if tmpl.EgressCA != "" {
		ca := filepath.Join(dir, slotCA)
		// A certificate bundle, not a key: readable by the sandbox user.
		if err := os.WriteFile(ca, nil, 0o644); err != nil { //nolint:gosec // G306: a public certificate bundle
			return fail(err)
		}
		tmpl.EgressCA = ca
	}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// join gives the slot to spec's run: its bundle is copied into the slot's
// file, in place (the sandbox binds that file), and its connections go to
// spec's proxy. Nothing reaches the sandbox before its job, which comes
// after.
func (s *slot) join(spec *sandbox.Spec) error {
	if spec.EgressCA != "" {
		b, err := os.ReadFile(spec.EgressCA)
		if err != nil {
			return fmt.Errorf("read the egress proxy's trust bundle: %w", err)
		}
		if err := os.WriteFile(filepath.Join(s.dir, slotCA), b, 0o644); err != nil { //nolint:gosec // G306: a public certificate bundle
			return fmt.Errorf("give the egress proxy's trust bundle to the sandbox: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.upstream = spec.EgressSocket
	return nil
}

func (s *slot) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		up := s.upstream
		if s.closed || up == "" {
			s.mu.Unlock()
			_ = c.Close() // no run's proxy: no way out
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.relay(c, up)
	}
}

// relay joins one connection of the sandbox to the proxy's socket until
// either side ends. A proxy that is gone refuses it.
func (s *slot) relay(c net.Conn, up string) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	u, err := net.Dial("unix", up)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = u.Close()
		return
	}
	s.conns[u] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, u)
		s.mu.Unlock()
		_ = u.Close()
	}()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if w, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = w.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
	<-done
}

// close ends the slot: its socket, every connection through it and its
// folder. The sandbox binding it must be gone.
func (s *slot) close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	if s.ln != nil {
		_ = s.ln.Close()
	}
	s.wg.Wait()
	return os.RemoveAll(s.dir)
}

// joinSlot gives the egress slot of a warm sandbox to spec's run; every
// warm sandbox of an egress run's key has one.
func (e *Engine) joinSlot(b Box, spec *sandbox.Spec) error {
	v, _ := e.slots.Load(b)
	s, ok := v.(*slot)
	if !ok {
		return fmt.Errorf("warm sandbox %s has no egress slot for the run's proxy", b.RunID())
	}
	return s.join(spec)
}

// closeSlot ends b's egress slot, if it has one, once b is removed.
func (e *Engine) closeSlot(b Box) {
	v, _ := e.slots.LoadAndDelete(b)
	if s, ok := v.(*slot); ok {
		if err := s.close(); err != nil {
			e.log.Warn("remove egress slot", "run_id", b.RunID(), "error", err)
		}
	}
}

// A slot's folder is named for the process that made it (pid and start
// time, sandbox.OwnerOf): one left by a process that was killed is
// removed by the next engine made on this host (ReapSlots).
const slotPrefix = "sandboxrun-slot-"

// slotRoot holds the slots' folders; "" is os.TempDir. Tests move it.
var slotRoot = ""

func slotOwner() string {
	o := sandbox.OwnerOf(os.Getpid(), "")
	return strconv.Itoa(o.PID) + "-" + strconv.FormatUint(o.Start, 10)
}

// ReapSlots removes the slot folders under root ("" is os.TempDir) whose
// process is gone, and returns them; a folder whose owner cannot be read
// from its name, or whose process may be alive, is kept.
func ReapSlots(root string) ([]string, error) {
	if root == "" {
		root = os.TempDir()
	}
	dirs, err := filepath.Glob(filepath.Join(root, slotPrefix+"*"))
	if err != nil {
		return nil, err
	}
	var gone []string
	var errs []error
	for _, d := range dirs {
		parts := strings.SplitN(strings.TrimPrefix(filepath.Base(d), slotPrefix), "-", 3)
		if len(parts) != 3 {
			continue
		}
		pid, perr := strconv.Atoi(parts[0])
		start, serr := strconv.ParseUint(parts[1], 10, 64)
		if perr != nil || serr != nil || pid <= 0 || sandbox.ProcessAlive(pid, start) {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		gone = append(gone, d)
	}
	return gone, errors.Join(errs...)
}
