package policy

import (
	"errors"
	"testing"
	"time"
)

// FuzzParsePolicy: any input is either refused with ErrPolicyFile or gives
// a policy whose every setting can be shown and applied.
func FuzzParsePolicy(f *testing.F) {
	for _, seed := range []string{
		"", "limits: {memory: {default: 256Mi, max: 1Gi}}\n", "on_exceed: clamp\nnetwork: none\n",
		"skills:\n  a:\n    allowed-tools: Bash(git:*)\n    limits: {timeout: {max: 300}}\n",
		"workspace: {write: read-only, roots: [/srv]}\n", "limits:\n  cpus: {default: 3, max: 2}\n",
		"limits: [1]\n", "skills: {a: null}\n", "build: {source_builds: yes}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		o, err := ParsePolicy("f.yaml", []byte(text))
		if err != nil {
			if !errors.Is(err, ErrPolicyFile) {
				t.Fatalf("error %v does not wrap ErrPolicyFile", err)
			}
			return
		}
		_ = o.Entries()
		for name := range o.Skills {
			if _, err := o.Decide(name, SkillLimits{Timeout: 600 * time.Second, MemoryMiB: 1 << 20, CPUs: 64, Network: true}, Request{}); err != nil && !errors.Is(err, ErrLimit) {
				t.Fatalf("Decide: %v", err)
			}
		}
		l, err := o.Decide("x", SkillLimits{}, Request{})
		if err != nil {
			t.Fatalf("the policy's own defaults are refused: %v", err)
		}
		if l.Timeout < MinTimeout || l.Timeout > MaxTimeout || l.MemoryBytes < MinMemoryMiB<<20 || l.CPUs <= 0 || l.Pids <= 0 {
			t.Fatalf("defaults out of bounds: %+v", l)
		}
	})
}
