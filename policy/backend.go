package policy

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// Backends an operator can choose.
const (
	BackendDocker     = "docker"
	BackendKubernetes = "kubernetes"
	BackendOCI        = "oci"
)

// BackendRules choose where sandboxes run:
//
//	backend: kubernetes           # docker when omitted
//	kubernetes:
//	  kubeconfig: /etc/sandboxrun/kubeconfig   # omitted: in-cluster config
//	  namespace: sandboxrun                    # default "default"
//	  runtime_class: gvisor                    # omitted: the node's default
//	  warm: 2                                  # pods started ahead; 0 (off) when omitted
//	  warm_idle: 5m                            # how long a warm pod may wait; default 5m
//	  claims:                                  # volume claims holding skills or workspaces
//	    - {name: sandbox-skills, path: /srv/skills}
//	  host_paths: false                        # folders under no claim are refused; default true
//	  skills: send                             # a skill folder under no claim is sent to its pod; default mount
//	  skill_send_max: 16Mi                     # the largest skill sent (its size in the pod's tmpfs); default 16Mi
//	  isolation_targets: [10.96.0.10:53]       # listening addresses the isolation probe tries (host:port)
//	  isolation_recheck: 5m                    # how long a proof of isolation holds; default 5m
//	  isolation_cluster_dns: false             # the cluster DNS is no target; default true
//	  isolation_api_server: false              # the API server's Service is no target; default true
//	docker:
//	  usr_volumes: false                       # default true (sandbox/docker WithUsrVolumes)
//	  warm_pool:                               # serve and mcp: warm containers sized by demand
//	    max: 8                                 # in all, across configurations; 0 is off; default 4
//	    idle: 2m                               # a configuration unused this long holds none; default 5m
//
// The kubernetes section is read only with backend: kubernetes, the docker
// section only with the docker backend.
type BackendRules struct {
	Backend    Backend         `yaml:"backend" json:"backend"`
	Kubernetes KubernetesRules `yaml:"kubernetes" json:"kubernetes"`
	Docker     DockerRules     `yaml:"docker" json:"docker"`
	// OCI is read only with backend: oci (oci.go).
	OCI OCIRules `yaml:"oci" json:"oci"`
}

// DockerRules tune the Docker backend.
type DockerRules struct {
	// UsrVolumes, when false, keeps sandboxes reading /usr from the image
	// through the storage driver instead of from a read-only copy of it
	// (sandbox/docker WithUsrVolumes); nil means true.
	UsrVolumes *bool `yaml:"usr_volumes" json:"usr_volumes,omitempty"`
	// WarmPool sizes the warm pool of `sandboxrun serve` and `sandboxrun
	// mcp`; their --warm-pool and --warm-idle flags, when given, win.
	WarmPool WarmPoolRules `yaml:"warm_pool" json:"warm_pool"`
	Line     int           `yaml:"-" json:"-"`
}

// WarmPoolRules are docker.warm_pool: the cap on warm containers, shared
// by configurations in proportion to their recent demand (sandbox/docker
// WithWarmPoolByDemand), and how long an unused configuration keeps them.
type WarmPoolRules struct {
	// Max is the cap; nil means DefaultWarmPoolMax, 0 turns the pool off.
	Max *int `yaml:"max" json:"max,omitempty"`
	// Idle is the idle window; zero means DefaultWarmIdle.
	Idle Duration `yaml:"idle" json:"idle,omitempty"`
	Line int      `yaml:"-" json:"-"`
}

// DefaultWarmPoolMax is the warm pool's cap when neither the policy nor a
// flag sets one: on a small host (2 CPUs) it keeps a loop of runs warm,
// and idle it costs 4 waiting containers, for at most the idle window.
const DefaultWarmPoolMax = 4

var (
	dockerKeys   = []string{"usr_volumes", "warm_pool"}
	warmPoolKeys = []string{"max", "idle"}
)

// UnmarshalYAML refuses unknown keys and values out of bounds.
func (w *WarmPoolRules) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "docker.warm_pool", warmPoolKeys); err != nil {
		return err
	}
	type plain WarmPoolRules
	var v plain
	if err := n.Decode(&v); err != nil {
		return inSection(n, "docker.warm_pool", err)
	}
	switch {
	case v.Max != nil && (*v.Max < 0 || *v.Max > MaxWarm):
		return fmt.Errorf("line %d: docker.warm_pool.max %d: use 0 (off) to %d containers", n.Line, *v.Max, MaxWarm)
	case v.Idle < 0 || time.Duration(v.Idle) > MaxWarmIdle:
		return fmt.Errorf("line %d: docker.warm_pool.idle %s: use a positive duration of at most %s", n.Line, v.Idle, MaxWarmIdle)
	}
	*w = WarmPoolRules(v)
	w.Line = n.Line
	return nil
}

// MaxOrDefault is Max, or DefaultWarmPoolMax when it was not set.
func (w WarmPoolRules) MaxOrDefault() int {
	if w.Max == nil {
		return DefaultWarmPoolMax
	}
	return *w.Max
}

// IdleOrDefault is Idle, or DefaultWarmIdle when it was not set.
func (w WarmPoolRules) IdleOrDefault() time.Duration {
	if w.Idle == 0 {
		return DefaultWarmIdle
	}
	return time.Duration(w.Idle)
}

// UnmarshalYAML refuses unknown keys: a misspelt key must not pass for a
// setting.
func (d *DockerRules) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "docker", dockerKeys); err != nil {
		return err
	}
	type plain DockerRules
	var v plain
	if err := n.Decode(&v); err != nil {
		return inSection(n, "docker", err)
	}
	*d = DockerRules(v)
	d.Line = n.Line
	return nil
}

// checkKeys refuses a section that is not a mapping, or that has a key
// other than known: a misspelt key must not pass for a setting.
func checkKeys(n *yaml.Node, section string, known []string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: %s: expected a mapping of %v", n.Line, section, known)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if key := n.Content[i]; !slices.Contains(known, key.Value) {
			return fmt.Errorf("line %d: %s: unknown key %q (known: %v)", key.Line, section, key.Value, known)
		}
	}
	return nil
}

// UsrVolumesOn is UsrVolumes, true when it was not set.
func (d DockerRules) UsrVolumesOn() bool { return d.UsrVolumes == nil || *d.UsrVolumes }

// Backend is the name of the sandbox backend; empty means docker.
type Backend struct {
	Name string `json:"name,omitempty"`
	Line int    `json:"-"`
}

// UnmarshalYAML accepts the known backend names only.
func (b *Backend) UnmarshalYAML(n *yaml.Node) error {
	var v string
	if err := n.Decode(&v); err != nil {
		return inSection(n, "backend", err)
	}
	if v != BackendDocker && v != BackendKubernetes && v != BackendOCI {
		return fmt.Errorf("line %d: backend %q: use %s, %s or %s", n.Line, v, BackendDocker, BackendKubernetes, BackendOCI)
	}
	b.Name, b.Line = v, n.Line
	return nil
}

// Kind is the backend's name, docker when the file named none.
func (b Backend) Kind() string {
	if b.Name == "" {
		return BackendDocker
	}
	return b.Name
}

// KubernetesRules say how the kubernetes backend reaches its cluster.
type KubernetesRules struct {
	// Kubeconfig is an absolute path; empty means the in-cluster service
	// account (sandboxrun running in a pod).
	Kubeconfig string `yaml:"kubeconfig" json:"kubeconfig,omitempty"`
	// Namespace holds the sandbox pods; empty means "default".
	Namespace string `yaml:"namespace" json:"namespace,omitempty"`
	// RuntimeClass is the pods' runtimeClassName (gVisor, Kata...).
	RuntimeClass string `yaml:"runtime_class" json:"runtime_class,omitempty"`
	// ImagePullPolicy is the sandbox pods' imagePullPolicy: Never (the
	// default: images are loaded into the nodes), IfNotPresent or Always
	// (clusters with a registry).
	ImagePullPolicy string `yaml:"image_pull_policy" json:"image_pull_policy,omitempty"`
	// Warm is the size of the warm pod pool: pods started ahead of their
	// runs, each serving one run (sandbox/kube WithWarmPool). 0 is off.
	Warm int `yaml:"warm" json:"warm,omitempty"`
	// WarmIdle is how long a warm pod may wait for its run; zero means
	// DefaultWarmIdle.
	WarmIdle Duration `yaml:"warm_idle" json:"warm_idle,omitempty"`
	// Claims are PersistentVolumeClaims in Namespace whose volumes hold
	// the folders sandboxrun sees under their Path (sandbox/kube
	// WithClaims).
	Claims []ClaimRule `yaml:"claims" json:"claims,omitempty"`
	// HostPaths, when false, refuses a skill folder or workspace under no
	// claim instead of mounting it from the node; nil means true.
	HostPaths *bool `yaml:"host_paths" json:"host_paths,omitempty"`
	// Skills says how a skill folder under no claim reaches its Pod:
	// "mount" (or empty) from the node (a hostPath, as host_paths allows),
	// "send" over the run's side channel into a tmpfs, unpacked read-only
	// by sandbox-init (sandbox/kube WithSkillSend). Claims win either way.
	Skills string `yaml:"skills" json:"skills,omitempty"`
	// SkillSendMax caps a sent skill's size in its Pod's tmpfs; zero means
	// DefaultSkillSendMax. Only with skills: send.
	SkillSendMax Size `yaml:"skill_send_max" json:"skill_send_max,omitempty"`
	// SkillSendGuard says what keeps a sent skill read-only to the script:
	// "landlock" (or empty), and a node whose kernel has none fails the
	// run; "modes", and such a node runs it with the files read-only by
	// mode alone (the script could chmod and write its Pod's copy). Only
	// with skills: send.
	SkillSendGuard string `yaml:"skill_send_guard" json:"skill_send_guard,omitempty"`
	// IsolationTargets are addresses (host:port, the host a DNS name or
	// an address) that listen and that Pods reach: where a sandbox Pod has
	// more than loopback, runs without network need connections to them
	// to fail from a Pod made like a sandbox Pod and open from a control
	// Pod (sandbox/kube WithIsolationTargets). They add to the cluster
	// DNS Service.
	IsolationTargets []string `yaml:"isolation_targets" json:"isolation_targets,omitempty"`
	// IsolationRecheck is how long a proof of isolation holds; zero means
	// sandbox/kube's default (5m).
	IsolationRecheck Duration `yaml:"isolation_recheck" json:"isolation_recheck,omitempty"`
	// IsolationClusterDNS, when false, keeps the cluster DNS Service out
	// of the isolation probe's targets (sandbox/kube
	// WithClusterDNSTarget); nil means true.
	IsolationClusterDNS *bool `yaml:"isolation_cluster_dns" json:"isolation_cluster_dns,omitempty"`
	// IsolationAPIServer, when false, keeps the API server's Service out
	// of the isolation probe's targets (sandbox/kube
	// WithAPIServerTarget); nil means true.
	IsolationAPIServer *bool `yaml:"isolation_api_server" json:"isolation_api_server,omitempty"`
	Line               int   `yaml:"-" json:"-"`
}

// ClaimRule is one entry of kubernetes.claims.
type ClaimRule struct {
	Name string `yaml:"name" json:"name"`
	Path string `yaml:"path" json:"path"`
}

var claimKeys = []string{"name", "path"}

// UnmarshalYAML refuses keys other than name and path: a misspelt key
// must not pass for a setting.
func (c *ClaimRule) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "kubernetes.claims", claimKeys); err != nil {
		return err
	}
	type plain ClaimRule
	var v plain
	if err := n.Decode(&v); err != nil {
		return inSection(n, "kubernetes.claims", err)
	}
	*c = ClaimRule(v)
	return nil
}

// The values of kubernetes.skills.
const (
	SkillsMount = "mount"
	SkillsSend  = "send"
)

// The values of kubernetes.skill_send_guard.
const (
	SkillGuardLandlock = "landlock"
	SkillGuardModes    = "modes"
)

// SkillModesOnly says whether a sent skill may run with its files
// read-only by mode alone where the node has no Landlock.
func (k KubernetesRules) SkillModesOnly() bool { return k.SkillSendGuard == SkillGuardModes }

// Bounds of kubernetes.skill_send_max: the tmpfs it sizes is charged to
// the Pod's memory, and the packed skills are kept in this process's.
const (
	DefaultSkillSendMax = 16 << 20
	MaxSkillSendMax     = 256 << 20
)

// SendsSkills says whether skill folders under no claim are sent.
func (k KubernetesRules) SendsSkills() bool { return k.Skills == SkillsSend }

// SkillSendMaxOrDefault is SkillSendMax, or DefaultSkillSendMax when it
// was not set.
func (k KubernetesRules) SkillSendMaxOrDefault() int64 {
	if k.SkillSendMax == 0 {
		return DefaultSkillSendMax
	}
	return int64(k.SkillSendMax)
}

// HostPathsAllowed is HostPaths, true when it was not set.
func (k KubernetesRules) HostPathsAllowed() bool { return k.HostPaths == nil || *k.HostPaths }

// Bounds of the warm pools: each warm pod holds its requests on a node
// while it waits, and its deadline is longer by the idle time; each warm
// container holds its memory on this host.
const (
	MaxWarm         = 64
	DefaultWarmIdle = 5 * time.Minute
	MaxWarmIdle     = time.Hour
)

// Bounds of the isolation probe's settings: a proof made every few
// seconds would be a Pod every few seconds; one kept for a day would miss
// a policy deleted in the morning.
const (
	MinIsolationRecheck = 30 * time.Second
	MaxIsolationRecheck = time.Hour
	MaxIsolationTargets = 16
)

// CheckTarget refuses an isolation target that is not host:port with a
// port from 1 to 65535 (sandbox/kube checks its option with it).
func CheckTarget(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q: %w: write host:port, e.g. 10.96.0.10:53 or [fd00::a]:53", s, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
		return fmt.Errorf("%q: write host:port with a host and a port from 1 to 65535", s)
	}
	return nil
}

// WarmIdleOrDefault is WarmIdle, or DefaultWarmIdle when it was not set.
func (k KubernetesRules) WarmIdleOrDefault() time.Duration {
	if k.WarmIdle == 0 {
		return DefaultWarmIdle
	}
	return time.Duration(k.WarmIdle)
}

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
)

var kubernetesKeys = []string{"kubeconfig", "namespace", "runtime_class", "image_pull_policy", "warm", "warm_idle", "claims", "host_paths", "skills", "skill_send_max", "skill_send_guard",
	"isolation_targets", "isolation_recheck", "isolation_cluster_dns", "isolation_api_server"}

// UnmarshalYAML reads the section strictly: unknown keys and names
// Kubernetes would refuse are errors naming the line.
func (k *KubernetesRules) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "kubernetes", kubernetesKeys); err != nil {
		return err
	}
	type plain KubernetesRules
	var v plain
	if err := n.Decode(&v); err != nil {
		return inSection(n, "kubernetes", err)
	}
	switch {
	case v.Kubeconfig != "" && !filepath.IsAbs(v.Kubeconfig):
		return fmt.Errorf("line %d: kubernetes.kubeconfig %q must be an absolute path", n.Line, v.Kubeconfig)
	case v.Namespace != "" && !dnsLabel.MatchString(v.Namespace):
		return fmt.Errorf("line %d: kubernetes.namespace %q is not a namespace name (lower-case letters, digits, '-', at most 63)", n.Line, v.Namespace)
	case v.RuntimeClass != "" && !dnsSubdomain.MatchString(v.RuntimeClass):
		return fmt.Errorf("line %d: kubernetes.runtime_class %q is not a RuntimeClass name", n.Line, v.RuntimeClass)
	case v.ImagePullPolicy != "" && v.ImagePullPolicy != "Never" && v.ImagePullPolicy != "IfNotPresent" && v.ImagePullPolicy != "Always":
		return fmt.Errorf("line %d: kubernetes.image_pull_policy %q: use Never (images loaded into the nodes), IfNotPresent or Always", n.Line, v.ImagePullPolicy)
	case v.Warm < 0 || v.Warm > MaxWarm:
		return fmt.Errorf("line %d: kubernetes.warm %d: use 0 (off) to %d pods", n.Line, v.Warm, MaxWarm)
	case time.Duration(v.WarmIdle) > MaxWarmIdle:
		return fmt.Errorf("line %d: kubernetes.warm_idle %s: use at most %s", n.Line, v.WarmIdle, MaxWarmIdle)
	case v.IsolationRecheck < 0 || (v.IsolationRecheck > 0 && time.Duration(v.IsolationRecheck) < MinIsolationRecheck) || time.Duration(v.IsolationRecheck) > MaxIsolationRecheck:
		return fmt.Errorf("line %d: kubernetes.isolation_recheck %s: use %s to %s", n.Line, v.IsolationRecheck, MinIsolationRecheck, MaxIsolationRecheck)
	case v.Skills != "" && v.Skills != SkillsMount && v.Skills != SkillsSend:
		return fmt.Errorf("line %d: kubernetes.skills %q: use mount (from a claim, else the node) or send (over the run's attach when no claim holds the folder)", n.Line, v.Skills)
	case v.SkillSendMax != 0 && v.Skills != SkillsSend:
		return fmt.Errorf("line %d: kubernetes.skill_send_max is set but skills are not sent: add kubernetes.skills: send, or remove it", n.Line)
	case v.SkillSendGuard != "" && v.SkillSendGuard != SkillGuardLandlock && v.SkillSendGuard != SkillGuardModes:
		return fmt.Errorf("line %d: kubernetes.skill_send_guard %q: use landlock (a node without it fails the run) or modes (such a node runs it, the skill read-only by mode only)", n.Line, v.SkillSendGuard)
	case v.SkillSendGuard != "" && v.Skills != SkillsSend:
		return fmt.Errorf("line %d: kubernetes.skill_send_guard is set but skills are not sent: add kubernetes.skills: send, or remove it", n.Line)
	case v.SkillSendMax < 0 || v.SkillSendMax > MaxSkillSendMax:
		return fmt.Errorf("line %d: kubernetes.skill_send_max %s: use at most %s (the pod's tmpfs holds it, charged to its memory), or put large skills under a claim", n.Line, v.SkillSendMax, Size(MaxSkillSendMax))
	case len(v.IsolationTargets) > MaxIsolationTargets:
		return fmt.Errorf("line %d: kubernetes.isolation_targets: %d targets: name at most %d", n.Line, len(v.IsolationTargets), MaxIsolationTargets)
	}
	for i, t := range v.IsolationTargets {
		if err := CheckTarget(t); err != nil {
			return fmt.Errorf("line %d: kubernetes.isolation_targets[%d]: %w", n.Line, i, err)
		}
	}
	if err := checkClaims(v.Claims, n.Line); err != nil {
		return err
	}
	*k = KubernetesRules(v)
	k.Line = n.Line
	return nil
}

// checkClaims refuses a claim without a valid name, a path that is not an
// absolute, clean folder other than /, a name or path given twice, and
// paths inside one another (a folder would have two sources).
func checkClaims(claims []ClaimRule, line int) error {
	for i, c := range claims {
		switch {
		case !dnsSubdomain.MatchString(c.Name):
			return fmt.Errorf("line %d: kubernetes.claims[%d].name %q is not a volume claim name (lower-case letters, digits, '-', '.')", line, i, c.Name)
		case !filepath.IsAbs(c.Path) || filepath.Clean(c.Path) != c.Path || c.Path == "/":
			return fmt.Errorf("line %d: kubernetes.claims[%d].path %q: give the absolute, clean folder the claim holds, other than /", line, i, c.Path)
		}
		for j, d := range claims[:i] {
			if d.Name == c.Name {
				return fmt.Errorf("line %d: kubernetes.claims[%d] and [%d] both name claim %q: list each claim once", line, j, i, c.Name)
			}
			if PathWithin(c.Path, d.Path) || PathWithin(d.Path, c.Path) {
				return fmt.Errorf("line %d: kubernetes.claims[%d] (%s) and [%d] (%s) overlap: give folders that do not contain one another", line, j, d.Path, i, c.Path)
			}
		}
	}
	return nil
}
