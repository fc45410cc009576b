package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/egress/egresslog"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// Sentinels callers and responses branch on.
var (
	// ErrDenied marks a request the run's policy refuses: a host not in
	// the allowlist, a refused address, an SNI that does not match.
	ErrDenied = errors.New("egress denied")
	// ErrLimit marks a request refused, or a connection cut, because the
	// run used up its connections or bytes.
	ErrLimit = errors.New("egress limit reached")
)

// SocketName is the proxy's socket inside its private folder.
const SocketName = "egress.sock"

// Config is what one run may reach and how much.
type Config struct {
	// RunID names the socket's folder, so a leaked one can be traced.
	RunID string
	// Allow is the effective allowlist; empty allows nothing.
	Allow egressrule.Allowlist
	// AllowCIDRs are the ranges where non-public addresses (and IP
	// literals) may be reached.
	AllowCIDRs []netip.Prefix
	// MaxConnections bounds the upstream connections opened for the run
	// (one per CONNECT tunnel or plain-HTTP request).
	MaxConnections int64
	// MaxBytes bounds the bytes through them, both directions together.
	MaxBytes int64
	// IdleTimeout closes a connection with no traffic either way for that
	// long.
	IdleTimeout time.Duration
	// Secrets are added to requests to their hosts (secrets.go); the
	// sandbox holds their placeholders.
	Secrets []Secret
	// Rules and SkillRules limit methods and paths per host (rules.go).
	Rules, SkillRules []egressrule.HTTPRule
	// UpstreamRoots verify intercepted hosts; nil means the system's.
	UpstreamRoots *x509.CertPool
}

// Validate checks the limits.
func (c Config) Validate() error {
	var errs []error
	if c.MaxConnections < 1 {
		errs = append(errs, fmt.Errorf("MaxConnections is %d: allow at least 1", c.MaxConnections))
	}
	if c.MaxBytes < 1 {
		errs = append(errs, fmt.Errorf("MaxBytes is %d: allow at least 1", c.MaxBytes))
	}
	if c.IdleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("IdleTimeout is %s: use a positive duration", c.IdleTimeout))
	}
	return errors.Join(errs...)
}

// ConfigFor turns a run's decided egress into a Config.
func ConfigFor(runID string, e *policy.Egress) (Config, error) {
	allow, err := egressrule.ParseAllowlist(e.Allow)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{RunID: runID, Allow: allow, MaxConnections: e.MaxConnections, MaxBytes: e.MaxBytes, IdleTimeout: e.IdleTimeout}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = time.Duration(e.IdleTimeoutSec * float64(time.Second))
	}
	for _, c := range e.AllowCIDRs {
		p, err := egressrule.ParseCIDR(c)
		if err != nil {
			return Config{}, err
		}
		cfg.AllowCIDRs = append(cfg.AllowCIDRs, p)
	}
	if err := interceptConfig(&cfg, e); err != nil {
		return Config{}, err
	}
	return cfg, cfg.Validate()
}

// Resolver looks up a name's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Option configures a Proxy.
type Option func(*settings)

type settings struct {
	resolver    Resolver
	logger      *slog.Logger
	observe     func(egresslog.Decision)
	dir         string
	uid, gid    int
	dialTimeout time.Duration
	helloWait   time.Duration
	hostAddrs   func() ([]netip.Addr, error)
	owner       map[string]string
}

func defaultSettings() settings {
	return settings{
		resolver:    net.DefaultResolver,
		logger:      slog.New(slog.DiscardHandler),
		uid:         -1,
		gid:         -1,
		dialTimeout: 10 * time.Second,
		helloWait:   10 * time.Second,
		hostAddrs:   interfaceAddrs,
	}
}

// WithResolver sets the resolver for host names. Default: the system's.
func WithResolver(r Resolver) Option { return func(s *settings) { s.resolver = r } }

// WithLogger sets the logger; decisions are logged at debug level.
// Default: discard.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithObserver calls f with every decision when it is complete (after its
// connection closed), e.g. to count them in metrics. f must not block.
func WithObserver(f func(egresslog.Decision)) Option { return func(s *settings) { s.observe = f } }

// WithDir sets where the proxy's private folder is created. Default:
// os.TempDir(). The Docker engine must see the same path.
func WithDir(dir string) Option { return func(s *settings) { s.dir = dir } }

// WithSocketOwner gives the socket to uid:gid (mode 0600), so the sandbox
// user, and only it, can connect. Changing the owner needs root; -1 keeps
// this process's. Default: -1.
func WithSocketOwner(uid, gid int) Option { return func(s *settings) { s.uid, s.gid = uid, gid } }

// WithDialTimeout bounds each upstream connect. Default: 10s.
func WithDialTimeout(d time.Duration) Option { return func(s *settings) { s.dialTimeout = d } }

// Proxy is one run's egress proxy: an HTTP proxy (CONNECT and plain HTTP)
// on a unix socket in a private folder. It allows what Config allows and
// records every decision. Close it when the run ends.
type Proxy struct {
	cfg    Config
	s      settings
	dir    string
	socket string
	addrs  addrPolicy
	budget budget
	rec    *recorder
	srv    *http.Server
	rp     *httputil.ReverseProxy
	// ca signs the certificates of intercepted hosts; nil when the run
	// intercepts none.
	ca     *authority
	caFile string

	// stop ends every request's context when the proxy closes, which
	// also cuts upgraded connections the forwarder holds.
	stop context.CancelFunc

	mu       sync.Mutex
	closed   bool
	tunnels  map[io.Closer]struct{}
	handlers sync.WaitGroup
	served   chan struct{}
	closeErr error
}

// Start creates the private folder, listens on its socket and serves until
// Close.
func Start(cfg Config, opts ...Option) (p *Proxy, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	s := defaultSettings()
	for _, o := range opts {
		o(&s)
	}
	own, err := s.hostAddrs()
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	dir, err := os.MkdirTemp(s.dir, folderPrefix+shortRunID(cfg.RunID)+"-")
	if err != nil {
		return nil, fmt.Errorf("egress proxy: create its folder: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	if err := writeOwner(dir, s.owner); err != nil {
		return nil, err
	}
	socket := filepath.Join(dir, SocketName)
	if len(socket) > maxSocketPath {
		return nil, fmt.Errorf("egress proxy: the socket path %s is %d bytes, over the kernel's %d: set a shorter TMPDIR (or egress.WithDir)", socket, len(socket), maxSocketPath)
	}
	ln, err := listen(socket, s.uid, s.gid)
	if err != nil {
		return nil, err
	}
	p = &Proxy{
		cfg: cfg, s: s, dir: dir, socket: socket,
		addrs:   addrPolicy{allow: cfg.AllowCIDRs, own: own},
		budget:  budget{maxConns: cfg.MaxConnections, maxBytes: cfg.MaxBytes},
		rec:     newRecorder(cfg, s.observe),
		tunnels: map[io.Closer]struct{}{},
		served:  make(chan struct{}),
	}
	errLog := log.New(io.Discard, "", 0)
	if s.logger.Enabled(context.Background(), slog.LevelDebug) {
		errLog = slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug)
	}
	if err := p.startAuthority(); err != nil {
		closeAll(ln)
		return nil, err
	}
	p.rp = p.forwarder(errLog)
	base, stop := context.WithCancel(context.Background())
	p.stop = stop
	p.srv = &http.Server{
		Handler:           p,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          errLog,
	}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(&limitListener{Listener: ln, sem: make(chan struct{}, maxClients)})
	}()
	return p, nil
}

func shortRunID(id string) string {
	const n = 24
	if len(id) > n {
		return id[:n]
	}
	return id
}

// Socket is the host path of the proxy's unix socket.
func (p *Proxy) Socket() string { return p.socket }

// Dir is the proxy's private folder; Close removes it.
func (p *Proxy) Dir() string { return p.dir }

// Close stops the proxy: it stops listening, cuts every connection, waits
// for their decisions to be recorded and removes the folder. It is safe to
// call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return p.closeErr
	}
	p.closed = true
	p.stop()
	for c := range p.tunnels {
		closeAll(c)
	}
	p.mu.Unlock()
	err := p.srv.Close()
	<-p.served
	p.handlers.Wait()
	if rerr := os.RemoveAll(p.dir); rerr != nil {
		err = errors.Join(err, fmt.Errorf("egress proxy: remove %s: %w", p.dir, rerr))
	}
	p.mu.Lock()
	p.closeErr = err
	p.mu.Unlock()
	return err
}

// Record is what the proxy decided so far; after Close it is complete.
func (p *Proxy) Record() egresslog.Record { return p.rec.record(&p.budget) }

// ServeHTTP answers CONNECT with a tunnel and other methods by forwarding
// absolute http:// URLs.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		http.Error(w, "sandboxrun egress proxy: shutting down", http.StatusServiceUnavailable)
		return
	}
	defer p.handlers.Done()
	if r.Method == http.MethodConnect {
		p.serveConnect(w, r)
		return
	}
	p.serveForward(w, r)
}

// enter registers a handler unless the proxy is closing.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.handlers.Add(1)
	return true
}

// track registers connections Close must cut; false when already closing.
func (p *Proxy) track(cs ...io.Closer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...io.Closer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.tunnels, c)
	}
}

// refuse answers a refused request with a plain-text reason the program in
// the sandbox can show.
func refuse(w http.ResponseWriter, status int, reason string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Connection", "close")
	w.WriteHeader(status)
	fmt.Fprintf(w, "sandboxrun egress proxy: %s\n", reason) //nolint:gosec // G705: text/plain with nosniff, never rendered as HTML
}

// closeAll closes connections whose close errors carry nothing to act on:
// they are being dropped.
func closeAll(cs ...io.Closer) {
	for _, c := range cs {
		c.Close()
	}
}

// statusFor is the answer to a failed request.
func statusFor(err error) int {
	switch {
	case errors.Is(err, ErrDenied):
		return http.StatusForbidden
	case errors.Is(err, ErrLimit):
		return http.StatusTooManyRequests
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	default:
		return http.StatusBadGateway
	}
}
