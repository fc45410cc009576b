package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxrun/sandboxrun/internal/skillpack"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/sandbox/engine"
)

// Sentinel errors of this backend; the Spec and image errors are
// sandbox's (ErrInvalidSpec, ErrImageNotFound, ErrNoReport).
var (
	// ErrUnavailable: the cluster's API server could not be reached. It
	// matches sandbox.ErrUnavailable.
	ErrUnavailable = sandbox.Unavailable("kubernetes API server unreachable")
	// ErrNetworkNotIsolated: a run without network was refused because no
	// probe proved that sandbox Pods have none: a probe Pod saw more than
	// loopback and no enforced deny-all NetworkPolicy was shown to stop
	// it (network.go). It matches sandbox.ErrNotIsolated.
	ErrNetworkNotIsolated = sandbox.NotIsolated("pods in this namespace are not proven network-isolated")
	// ErrPodStart: the Pod was not running within the start timeout or
	// failed before sandbox-init ran.
	ErrPodStart = errors.New("sandbox pod did not start")
)

// Runner runs each execution in a Pod of its own. It is safe for concurrent
// use; create one and share it.
type Runner struct {
	client         Client
	attacher       Attacher
	log            *slog.Logger
	namespace      string
	image          string
	version        string
	runtimeClass   string
	pullPolicy     corev1.PullPolicy
	callTimeout    time.Duration
	startTimeout   time.Duration
	initGrace      time.Duration
	backstopMargin time.Duration
	deleteGrace    time.Duration
	maxIdle        time.Duration // a warm Pod's longest wait
	ownerHost      string
	owner          map[string]string
	now            func() time.Time
	net            netProof
	isoTargets     []string // the operator's isolation targets (targets.go)
	clusterDNS     bool     // the cluster DNS is a target too
	apiServer      bool     // and the API server's Service
	// resolve looks a target's name up (tests replace it).
	resolve func(ctx context.Context, host string) ([]string, error)
	// life ends with Close: a probe under way stops.
	life      context.Context
	stop      context.CancelFunc
	claims    []Claim
	hostPaths bool
	// skills packs and keeps skill folders sent over the side channel;
	// nil when none are (WithSkillSend).
	skills      *skillpack.Cache
	modesOnly   bool        // a sent skill may run read-only by mode alone
	claimsSeen  sync.Map    // claim names read and found (checkClaim)
	nodesWarned atomic.Bool // the capacity check's blind spot was logged
	// logSource replaces the API's pod log in tests (the fake clientset
	// serves a fixed text).
	logSource func(ctx context.Context, name string) (io.ReadCloser, error)
	// eng runs every Spec: checks, slots, warm pool, job, teardown.
	eng *engine.Engine
}

var _ sandbox.Runner = (*Runner)(nil)

// New returns a Runner. It does not contact the cluster; call Ping
// (and CheckNetwork) for an early, clear failure.
func New(opts ...Option) (*Runner, error) {
	s := defaultSettings()
	for _, o := range opts {
		o(&s)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("configure kubernetes runner: %w", err)
	}
	if s.client == nil || s.attacher == nil {
		c, err := newCore(s.restConfig)
		if err != nil {
			return nil, err
		}
		if s.client == nil {
			s.client = c
		}
		if s.attacher == nil {
			s.attacher = &streamAttacher{config: s.restConfig, core: c, log: s.Logger}
		}
	}
	k := &Runner{
		client:         s.client,
		attacher:       s.attacher,
		log:            s.Logger,
		namespace:      s.namespace,
		image:          s.DefaultImage(),
		version:        s.Version,
		runtimeClass:   s.runtimeClass,
		pullPolicy:     s.pullPolicy,
		callTimeout:    s.CallTimeout,
		startTimeout:   s.startTimeout,
		initGrace:      s.InitGrace,
		backstopMargin: s.BackstopMargin,
		deleteGrace:    s.deleteGrace,
		maxIdle:        s.WarmMaxIdle,
		ownerHost:      s.OwnerHost,
		owner:          sandbox.OwnerLabels(),
		now:            time.Now,
		net:            netProof{retry: s.probeRetry, valid: s.probeValid},
		isoTargets:     s.isoTargets,
		clusterDNS:     s.clusterDNS,
		apiServer:      s.apiServer,
		resolve:        net.DefaultResolver.LookupHost,
		claims:         s.claims,
		hostPaths:      s.hostPaths,
		modesOnly:      s.skillModesOnly,
	}
	if s.skillSendMax > 0 {
		k.skills = skillpack.NewCache(skillpack.Limit{Max: s.skillSendMax, Key: SkillSendKey}, max(skillCacheBytes, 2*s.skillSendMax))
	}
	k.owner[sandbox.LabelOwnerHost] = s.OwnerHost
	k.life, k.stop = context.WithCancel(context.Background())
	// The engine's clock is the runner's, which tests move.
	k.eng = engine.New(driver{k}, engine.Config{Options: s.Options, Identity: sandbox.IdentityFor(0, 0),
		Prestart: true, CapacityTTL: capacityTTL, Now: func() time.Time { return k.now() }})
	return k, nil
}

// RESTConfig loads the cluster connection: from the kubeconfig file when
// path is set, else the in-cluster service account.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster kubernetes config: %w: set a kubeconfig in the policy's kubernetes section when not running in a pod", err)
		}
		return c, nil
	}
	c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	return c, nil
}

// Image returns the default image.
func (k *Runner) Image() string { return k.image }

// Owner is a copy of the labels that name this runner's process as the
// owner of its Pods, which Reap reads.
func (k *Runner) Owner() map[string]string { return maps.Clone(k.owner) }

// Namespace returns the namespace of the runner's Pods.
func (k *Runner) Namespace() string { return k.namespace }

// Claims returns the volume claims folders are mounted from (WithClaims).
func (k *Runner) Claims() []Claim { return append([]Claim(nil), k.claims...) }

// Client returns the API client, e.g. for tests that list Pods.
func (k *Runner) Client() Client { return k.client }

// Ping checks that the API server answers.
func (k *Runner) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	// A namespaced read the runner needs anyway: it also proves the
	// credentials reach the namespace.
	_, err := k.client.Pods(k.namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return apiError("list pods in namespace "+k.namespace, err)
	}
	return nil
}

// CheckImage reports whether ref (the default image when empty) is on a
// node, from the nodes' image lists, and returns the name it is listed
// under. Without permission to list nodes it cannot know and returns ref:
// a missing image then fails the run with ErrImageNotFound.
func (k *Runner) CheckImage(ctx context.Context, ref string) (string, error) {
	if ref == "" {
		ref = k.image
	}
	ctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	nodes, err := k.client.Nodes().List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		k.log.Debug("cannot list nodes to look for the image", "image", ref, "error", err)
		return ref, nil
	}
	if err != nil {
		return "", apiError("list nodes", err)
	}
	for _, n := range nodes.Items {
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				if imageNameMatches(name, ref) {
					return name, nil
				}
			}
		}
	}
	return "", fmt.Errorf("%w: %q is on no node of the cluster: load it into each node's container runtime (hack/k8s-up.sh imports it from Docker); pods never pull it", sandbox.ErrImageNotFound, ref)
}

// imageNameMatches compares a node's image name with a reference as a
// Pod names it: the runtime records short names with their registry.
func imageNameMatches(name, ref string) bool {
	return name == ref || name == "docker.io/"+ref || name == "docker.io/library/"+ref ||
		strings.TrimPrefix(name, "localhost/") == ref
}

// Run executes spec in a Pod of its own (new, or started ahead by the warm
// pool, WithWarmPool): the engine's run flow (engine.Engine.Run) through
// this backend's driver. It returns once sandbox-init has reported; the
// Pod is deleted in the background (WaitIdle, Close), and before Run
// returns when the run ends without a report (cancelled, killed, failed
// to start).
//
// A nil Result comes only with a refusal before any Pod exists (the error
// matches sandbox.ErrInvalidSpec, ErrSkillUnreadable, ErrWorkspace or
// ErrBeyondHost, or ErrNetworkNotIsolated), with the cluster unreachable
// while it was asked about its nodes (CheckSpec), or with ctx ending
// before the run had a slot.
func (k *Runner) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	return k.eng.Run(ctx, spec)
}

// CheckSpec refuses memory or CPUs above what the largest schedulable
// node can give a Pod, or above a LimitRange's max for a container in the
// namespace when that is smaller: such a Pod would wait in Pending until
// the start timeout, or be refused by admission. Run makes the same check
// before any Pod exists, in the engine's words (sandbox.ErrBeyondHost).
// The cluster's answer is kept for a minute. Without permission to list
// nodes (RBAC), only LimitRanges bound it; with neither, nothing is
// checked (logged once).
func (k *Runner) CheckSpec(ctx context.Context, spec sandbox.Spec) error {
	return k.eng.CheckSpec(ctx, spec)
}

// PoolStats returns the warm pool's figures; all zero when it is off.
func (k *Runner) PoolStats() sandbox.PoolStats { return k.eng.PoolStats() }

// WaitIdle waits until every finished run's Pod is deleted and the warm
// pool's starts are done, or ctx ends.
func (k *Runner) WaitIdle(ctx context.Context) error { return k.eng.WaitIdle(ctx) }

// Close deletes the warm pool's Pods, idle or starting, and the Pods of
// finished runs, and returns once the deletions are made. Runs must have
// returned. A process that exits without Close leaves warm Pods for Reap
// (their owner is gone).
func (k *Runner) Close() error {
	k.stop()
	k.net.probes.Wait() // a probe's Pods are deleted when it ends
	return k.eng.Close(context.Background())
}

// apiError wraps an API failure with what was being done, and maps an
// unreachable server onto ErrUnavailable.
func apiError(doing string, err error) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) && !errors.Is(err, context.Canceled) {
		// No answer from the server at all: connection refused, TLS,
		// DNS, timeout.
		return fmt.Errorf("%s: %w: check the kubeconfig and that the cluster is up: %w", doing, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// What the kubernetes Runner offers beyond sandbox.Runner.
var (
	_ sandbox.Pinger            = (*Runner)(nil)
	_ sandbox.ImageChecker      = (*Runner)(nil)
	_ sandbox.Reaper            = (*Runner)(nil)
	_ sandbox.PoolReporter      = (*Runner)(nil)
	_ sandbox.SpecChecker       = (*Runner)(nil)
	_ sandbox.IsolationReporter = (*Runner)(nil)
)
