package policy

import "time"

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
	// Network is true only when the skill declares network_access.
	Network bool `json:"network"`
}
