package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// ErrBeyondHost refuses a Spec the engine's host cannot honour: more memory
// or CPUs than it has, or an engine runtime it does not know. It matches
// ErrInvalidSpec too: nothing was started.
var ErrBeyondHost = errors.New("beyond what the engine's host offers")

// engineFacts are what the engine reports about its host, asked once per
// Docker.
type engineFacts struct {
	cpus     int
	memory   int64
	runtimes []string
	driver   string // the storage driver
}

// engineCache holds the facts after the first successful Info call.
type engineCache struct {
	mu    sync.Mutex
	facts *engineFacts
}

func (c *engineCache) get(ctx context.Context, d *Runner) (*engineFacts, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.facts != nil {
		return c.facts, nil
	}
	cctx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	info, err := d.client.Info(cctx)
	if err != nil {
		return nil, apiError("ask the engine about its host", err)
	}
	f := &engineFacts{cpus: info.NCPU, memory: info.MemTotal, driver: info.Driver}
	for name := range info.Runtimes {
		f.runtimes = append(f.runtimes, name)
	}
	sort.Strings(f.runtimes)
	c.facts = f
	return f, nil
}

// beyondHostError is a refusal naming the field and the host's figure.
type beyondHostError struct{ msg string }

func (e *beyondHostError) Error() string { return e.msg }
func (e *beyondHostError) Is(target error) bool {
	return target == ErrBeyondHost || target == sandbox.ErrInvalidSpec
}

// checkEngine refuses limits above the host's memory or CPUs and an engine
// runtime the engine does not have, before any container exists. The engine
// would otherwise accept the memory (no cap at all in practice) and fail on
// the CPUs with a raw API error.
func (d *Runner) checkEngine(ctx context.Context, spec *sandbox.Spec) error {
	f, err := d.engine.get(ctx, d)
	if err != nil {
		return err
	}
	var msgs []string
	if f.memory > 0 && spec.Limits.MemoryBytes > f.memory {
		msgs = append(msgs, fmt.Sprintf("memory %s (max_memory / --memory) is above the engine host's %s; ask for less", size.Format(spec.Limits.MemoryBytes), size.Format(f.memory)))
	}
	if f.cpus > 0 && spec.Limits.CPUs > float64(f.cpus) {
		msgs = append(msgs, fmt.Sprintf("cpus %g (max_cpus / --cpus) is above the engine host's %d CPUs; ask for at most %d", spec.Limits.CPUs, f.cpus, f.cpus))
	}
	if d.ociRuntime != "" && !slices.Contains(f.runtimes, d.ociRuntime) {
		msgs = append(msgs, fmt.Sprintf("the engine has no runtime %q (it has: %s); register it in the engine's daemon.json, or choose one of those", d.ociRuntime, strings.Join(f.runtimes, ", ")))
	}
	if len(msgs) > 0 {
		return &beyondHostError{msg: ErrBeyondHost.Error() + ": " + strings.Join(msgs, "; ")}
	}
	return nil
}
