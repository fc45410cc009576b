package policy

import (
	"time"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Limits are the effective resource limits of one execution, after defaults,
// the skill's frontmatter and the request have been combined.
type Limits struct {
	Timeout     time.Duration `json:"-"`
	TimeoutSec  float64       `json:"timeout_s"`
	MemoryBytes int64         `json:"memory_bytes"`
	CPUs        float64       `json:"cpus"`
	Pids        int64         `json:"pids"`
	// OutputBytes caps each of stdout and stderr.
	OutputBytes int64 `json:"output_bytes"`
	TmpBytes    int64 `json:"tmp_bytes"`
	// WorkspaceWriteBytes caps what a run may write to a writable
	// workspace.
	WorkspaceWriteBytes int64 `json:"workspace_write_bytes"`
	// Network is true when the sandbox gets a full network (a bridge):
	// the skill declares network_access, names no allowed_domains, and the
	// operator's policy is network: declared.
	Network bool `json:"network"`
	// Egress is set when the sandbox reaches the network only through the
	// run's egress proxy, and says what it may reach.
	Egress *Egress `json:"egress,omitempty"`
	// Sources says where each of timeout, memory, cpus, pids and network
	// came from: the request, the skill, a policy default or ceiling (with
	// the file's line), or a built-in default.
	Sources map[string]where.Text `json:"sources,omitempty"`
	// Clamped names the limits that were lowered to a policy ceiling.
	Clamped []string `json:"clamped,omitempty"`
	// SecretsWithheld names the secrets the skill declares but this run
	// does not get (Sources["secrets"] says why).
	SecretsWithheld []string `json:"secrets_withheld,omitempty"`
}
