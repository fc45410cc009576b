package kube

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Option configures a Runner.
type Option func(*settings)

// settings hold every tunable; defaultSettings is the one place where
// defaults live.
type settings struct {
	sandbox.Options // what every backend shares, with its defaults
	restConfig      *rest.Config
	client          Client
	attacher        Attacher
	namespace       string
	runtimeClass    string
	pullPolicy      corev1.PullPolicy
	startTimeout    time.Duration
	deleteGrace     time.Duration
	probeRetry      time.Duration
	probeValid      time.Duration
	isoTargets      []string
	clusterDNS      bool
	apiServer       bool
	claims          []Claim
	hostPaths       bool
	skillSendMax    int64 // 0: skills are not sent
	skillModesOnly  bool  // a sent skill may run read-only by mode alone
}

func defaultSettings() settings {
	host, _ := os.Hostname() // an empty host only weakens reaping
	return settings{
		Options:      sandbox.DefaultOptions(host),
		namespace:    "default",
		pullPolicy:   corev1.PullNever,
		startTimeout: 2 * time.Minute,
		deleteGrace:  time.Second,
		probeRetry:   30 * time.Second,
		probeValid:   5 * time.Minute,
		clusterDNS:   true,
		apiServer:    true,
		hostPaths:    true,
	}
}

// Client-side rate limit of the API calls, when the REST config sets none.
// client-go's own default (5 per second, bursts of 10) holds a runner to
// about one Pod a second: each run makes four to five calls, and a warm
// pool's refills as many again. The API server's priority and fairness
// still protect it.
const (
	defaultQPS   = 50
	defaultBurst = 100
)

// WithRESTConfig connects to the cluster the config names (see
// RESTConfig); the API client and the attach executor are made from it. A
// config without a rate limit (QPS, Burst) gets 50 calls a second, in
// bursts of 100.
func WithRESTConfig(c *rest.Config) Option {
	return func(s *settings) {
		if c == nil {
			s.restConfig = nil
			return
		}
		c = rest.CopyConfig(c)
		if c.QPS == 0 && c.RateLimiter == nil {
			c.QPS = defaultQPS
		}
		if c.Burst == 0 && c.RateLimiter == nil {
			c.Burst = defaultBurst
		}
		s.restConfig = c
	}
}

// WithClient sets the API client (tests adapt client-go's fake clientset).
// Default: one made from WithRESTConfig.
func WithClient(c Client) Option { return func(s *settings) { s.client = c } }

// WithAttacher sets how the runner attaches to a Pod. Default: the
// WebSocket executor, falling back to SPDY, from WithRESTConfig.
func WithAttacher(a Attacher) Option { return func(s *settings) { s.attacher = a } }

// WithNamespace sets the namespace of every Pod. Default: "default".
func WithNamespace(ns string) Option { return func(s *settings) { s.namespace = ns } }

// WithDefaultImage sets the image used when Spec.Image is empty. It must
// be on the nodes already: Pods never pull. Default:
// sandboxrun/runner:<version>.
func WithDefaultImage(ref string) Option { return func(s *settings) { s.Image = ref } }

// WithVersion sets sandboxrun's version, visible to scripts as
// SANDBOXRUN_VERSION and recorded in a label.
func WithVersion(v string) Option { return func(s *settings) { s.Version = v } }

// WithRuntimeClass sets the Pods' runtimeClassName (gVisor, Kata...).
// Default: none, the node's default runtime.
func WithRuntimeClass(name string) Option { return func(s *settings) { s.runtimeClass = name } }

// WithImagePullPolicy sets the Pods' imagePullPolicy. Default: Never, for
// images loaded into the nodes; IfNotPresent or Always where the nodes
// pull from a registry.
// An empty p keeps the default.
func WithImagePullPolicy(p string) Option {
	return func(s *settings) {
		if p != "" {
			s.pullPolicy = corev1.PullPolicy(p)
		}
	}
}

// WithLogger sets the structured logger. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.Logger = l } }

// WithMaxConcurrent bounds the Pods of this runner alive at once; other
// runs wait for a slot or for their context. Default: 2 × NumCPU.
func WithMaxConcurrent(n int) Option { return func(s *settings) { s.MaxConcurrent = n } }

// WithCallTimeout bounds every short API call. Default: 30s.
func WithCallTimeout(d time.Duration) Option { return func(s *settings) { s.CallTimeout = d } }

// WithStartTimeout bounds how long a Pod may take to be scheduled and
// started. Default: 2m.
func WithStartTimeout(d time.Duration) Option { return func(s *settings) { s.startTimeout = d } }

// WithInitGrace sets how long sandbox-init waits between SIGTERM and
// SIGKILL when a script times out. Default: 2s.
func WithInitGrace(d time.Duration) Option { return func(s *settings) { s.InitGrace = d } }

// WithBackstopMargin sets how long past timeout + grace the runner waits
// for the report before it deletes the Pod at once. Default: 5s.
func WithBackstopMargin(d time.Duration) Option { return func(s *settings) { s.BackstopMargin = d } }

// WithDeleteGrace sets the grace period of a finished Pod's deletion.
// Default: 1s (sandbox-init has exited by then).
func WithDeleteGrace(d time.Duration) Option { return func(s *settings) { s.deleteGrace = d } }

// WithOwnerHost sets the host name recorded with the owner pid, which the
// reaper compares. Default: os.Hostname().
func WithOwnerHost(h string) Option { return func(s *settings) { s.OwnerHost = h } }

// WithWarmPool keeps size Pods started ahead of their runs, running and
// attached, with sandbox-init waiting for its job, so that runs with a
// configuration seen before (same skill, workspace, image and limits: the
// same Pod but for its name and run id) skip the Pod's scheduling, start
// and attach. After each run the pool is topped up to size for that run's
// configuration, in the background once the run has its Result. Each Pod
// still serves exactly one run and is deleted after it. Idle Pods are
// deleted after maxIdle, and all by Close; they do not count against
// WithMaxConcurrent. The run that takes a Pod patches it (RBAC: patch on
// pods). Default: off (size 0), which suits a process that runs once and
// exits.
func WithWarmPool(size int, maxIdle time.Duration) Option {
	return func(s *settings) { s.WarmSize, s.WarmMaxIdle, s.WarmByDemand = size, maxIdle, false }
}

// WithWarmPoolByDemand keeps warm Pods like WithWarmPool, but as many for
// each configuration as its recent demand asks, at most max in all, and
// none for a configuration not run for maxIdle (sandbox/warm ByDemand;
// the Docker runner's option of the same name). Default: off.
func WithWarmPoolByDemand(max int, maxIdle time.Duration) Option {
	return func(s *settings) { s.WarmSize, s.WarmMaxIdle, s.WarmByDemand = max, maxIdle, true }
}

// WithClaims names PersistentVolumeClaims (in the runner's namespace) that
// hold skill folders and workspaces: a folder under a claim's Path is
// mounted from the claim, read-only, at its place under Path (subPath).
// The claim's volume must hold the same files sandboxrun reads there
// (ReadOnlyMany, or ReadWriteMany written by whoever publishes the skills).
// RBAC: get on persistentvolumeclaims lets a missing claim fail at once.
// Default: none.
func WithClaims(claims ...Claim) Option {
	return func(s *settings) { s.claims = append([]Claim(nil), claims...) }
}

// WithHostPaths says whether a folder under no claim may come from the
// node's file system (hostPath volume), which needs the folders on every
// sandbox node at the same path and a namespace whose Pod Security level
// is privileged. Off, such runs are refused before any Pod exists.
// Default: on.
func WithHostPaths(on bool) Option { return func(s *settings) { s.hostPaths = on } }

// WithSkillSend has a skill folder under no claim travel to its Pod over
// the run's side channel instead of coming from the node: the runner packs
// it (internal/skillpack: read-only, links only inside it, no special
// files), keeps the archive by the folder's digest (Spec.SkillDigest), and
// sandbox-init unpacks it into a memory-backed emptyDir at /skills before
// the script starts. max caps what a skill may take there (the emptyDir's
// size); a larger skill is refused before any Pod exists, naming
// SkillSendKey. Host paths then serve workspaces only. Default: off (0).
func WithSkillSend(max int64) Option { return func(s *settings) { s.skillSendMax = max } }

// WithSkillModesOnly lets a sent skill run on a node whose kernel has no
// Landlock, its files read-only by mode alone (the script runs as the user
// that unpacked them, so it could chmod and write its Pod's copy). Off, the
// default, sandbox-init fails such a run before the script starts, naming
// SkillGuardKey.
func WithSkillModesOnly(on bool) Option { return func(s *settings) { s.skillModesOnly = on } }

// SkillGuardKey is the policy setting a run refused for want of Landlock
// names.
const SkillGuardKey = "kubernetes.skill_send_guard"

// SkillSendKey is the policy setting that caps a sent skill, named in the
// refusal of a larger one.
const SkillSendKey = "kubernetes.skill_send_max"

// skillCacheBytes bounds the packed skills a runner keeps, beyond which
// the least recently used is packed again when next run.
const skillCacheBytes = 256 << 20

// WithIsolationTargets names addresses (host:port; a host may be a DNS
// name, resolved here when the probe is made) that listen and that every
// Pod in the namespace reaches: where a sandbox Pod has more than
// loopback, isolation is proven only when connections to them fail from a
// Pod made like a sandbox Pod and open from a control Pod that lacks the
// label the deny-all policy selects (connprobe.go). They add to the
// cluster DNS Service (kube-system/kube-dns, TCP 53), which the runner
// looks up when it may. Default: none.
func WithIsolationTargets(targets ...string) Option {
	return func(s *settings) { s.isoTargets = append([]string(nil), targets...) }
}

// WithClusterDNSTarget says whether the isolation probe also tries the
// cluster DNS Service (kube-system/kube-dns, TCP 53). Turn it off where
// the cluster DNS listens on a node's own address (a node-local cache, a
// DNS on the host), which an enforcer of forwarded traffic such as
// kube-network-policies does not filter: there a sandbox-like Pod reaches
// it under the deny-all policy and the proof fails. Default: on.
func WithClusterDNSTarget(on bool) Option { return func(s *settings) { s.clusterDNS = on } }

// WithAPIServerTarget says whether the isolation probe also tries the API
// server through its Service (default/kubernetes, its https port): a
// sandbox Pod has no token, but a run without network must not reach it
// either. Turn it off only where the API server listens on a node's own
// address and the enforcer filters forwarded traffic alone (as
// kube-network-policies does): there the proof fails. Default: on.
func WithAPIServerTarget(on bool) Option { return func(s *settings) { s.apiServer = on } }

// WithIsolationRecheck sets how long a proof that sandbox Pods have no
// network holds; from half way, the next run without network starts a new
// probe in the background, and a failed one refuses such runs at once.
// Default: 5m.
func WithIsolationRecheck(d time.Duration) Option {
	return func(s *settings) {
		if d != 0 {
			s.probeValid = d
		}
	}
}

func (s *settings) validate() error {
	var errs []error
	if s.restConfig == nil && (s.client == nil || s.attacher == nil) {
		errs = append(errs, errors.New("no cluster: pass WithRESTConfig (see RESTConfig), or both WithClient and WithAttacher"))
	}
	if s.namespace == "" {
		errs = append(errs, errors.New("namespace is empty: name the namespace the sandbox pods run in"))
	}
	errs = append(errs, s.Validate("pods")...) // the shared tunables (sandbox.Options)
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"start timeout", s.startTimeout}, {"probe retry", s.probeRetry}, {"isolation recheck", s.probeValid},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s is %s: use a positive duration", d.name, d.v))
		}
	}
	for _, t := range s.isoTargets {
		if err := policy.CheckTarget(t); err != nil {
			errs = append(errs, fmt.Errorf("isolation target %w", err))
		}
	}
	if s.skillSendMax < 0 {
		errs = append(errs, fmt.Errorf("skill send cap is %d bytes: use a positive size, or 0 to send no skills", s.skillSendMax))
	}
	for i, c := range s.claims {
		if c.Name == "" || !filepath.IsAbs(c.Path) || filepath.Clean(c.Path) != c.Path || c.Path == "/" {
			errs = append(errs, fmt.Errorf("volume claim %d (%q at %q): give a claim name and an absolute, clean folder other than /", i, c.Name, c.Path))
		}
	}
	switch s.pullPolicy {
	case corev1.PullNever, corev1.PullIfNotPresent, corev1.PullAlways:
	default:
		errs = append(errs, fmt.Errorf("image pull policy %q: use Never, IfNotPresent or Always", s.pullPolicy))
	}
	if s.deleteGrace < 0 {
		errs = append(errs, fmt.Errorf("delete grace is %s: use 0 or more", s.deleteGrace))
	}
	return errors.Join(errs...)
}
