package sandboxrun

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/sandbox"
	"github.com/sandboxrun/sandboxrun/usage"
)

// The usage types a front end answers with, usage's own.
type (
	// TenantUsage is one token label's use, by window and in all.
	TenantUsage = usage.Tenant
	// UsageWindow is a label's use in the window of the clock now in.
	UsageWindow = usage.Window
	// UsageRun is one run's use, as a UsageObserver is told it.
	UsageRun = usage.Run
	// QuotaError names the quota a refused run would have passed and when
	// the next window lets runs in; it matches ErrQuota.
	QuotaError = usage.QuotaError
)

// ErrQuota means a run was refused before it started: its token reached
// a quota of the policy's tenants block (*QuotaError says which). The HTTP
// API answers 429 with Retry-After; nothing ran.
var ErrQuota = usage.ErrQuota

// ErrNoTenant means usage was asked by a caller without a token label:
// usage is counted per token, on a server with --tokens.
var ErrNoTenant = errors.New("usage is counted per bearer token: this caller has none (start the server with --tokens)")

// ErrNotOperator means a caller asked for every token's usage without
// being one of the policy's tenants.operators.
var ErrNotOperator = refused(errors.New("every token's usage is for the operator: list this token's label under the policy's tenants.operators, or ask GET /v1/usage for your own"))

// UsageObserver is told each run's use by token label, and each run a
// quota or the admission turned away (reason: a quota's name or "busy");
// an Observer that implements it (the server's metrics) is told.
type UsageObserver interface {
	ObserveUsage(label string, r UsageRun)
	ObserveRefusal(label, reason string)
}

// openUsage makes the Service's usage counts: kept in cfg.UsageState's
// file when set, over the windows the policy's quotas name (and an hour
// and a day).
func openUsage(cfg Config, pol *policy.Operator) (*usage.Store, error) {
	return usage.Open(usage.Options{Path: cfg.UsageState, Windows: pol.Tenants.UsageWindows(), Quotas: quotasOf(pol)})
}

// UsageStatePath is the usage state file under a server's state folder.
func UsageStatePath(stateDir string) string { return filepath.Join(stateDir, usage.StateFile) }

// ReadUsageState reads a usage state file as the Service with pol would
// see it, for a reader beside the server (`sandboxrun usage`).
func ReadUsageState(path string, pol *policy.Operator) ([]TenantUsage, error) {
	s, err := usage.ReadFile(path, pol.Tenants.UsageWindows(), quotasOf(pol))
	if err != nil {
		return nil, err
	}
	return s.All(), nil
}

// quotasOf is each label's quotas by window, from pol.
func quotasOf(pol *policy.Operator) func(string) map[time.Duration]usage.Limits {
	return func(label string) map[time.Duration]usage.Limits {
		qs := pol.Tenants.For(label).Quotas
		if len(qs) == 0 {
			return nil
		}
		out := make(map[time.Duration]usage.Limits, len(qs))
		for _, q := range qs {
			out[time.Duration(q.Window)] = usage.Limits{Runs: q.Runs, CPUSeconds: q.CPUSeconds, MemoryGiBSeconds: q.MemoryGiBSeconds, EgressBytes: int64(q.EgressBytes)}
		}
		return out
	}
}

// beginUsage lets a run of label's in under its quotas, or refuses it
// (a *QuotaError). The end function counts the run's Result; a caller
// without a label is neither bounded nor counted.
func (s *Service) beginUsage(label string) (func(*sandbox.Result), error) {
	if label == "" {
		return func(*sandbox.Result) {}, nil
	}
	k, err := s.usage.Begin(label)
	if err != nil {
		var qe *usage.QuotaError
		if errors.As(err, &qe) {
			s.observeRefusal(label, qe.Quota)
		}
		return nil, err
	}
	return func(res *sandbox.Result) {
		r := runUse(res)
		if err := k.End(r); err != nil {
			s.log.Error("usage state write failed", "err", err, "tenant", label)
		}
		if o, ok := s.cfg.Observer.(UsageObserver); ok && r != nil {
			o.ObserveUsage(label, *r)
		}
	}, nil
}

// runUse is what res counts: nil for no Result, or one the result cache
// answered (it used nothing).
func runUse(res *sandbox.Result) *usage.Run {
	if res == nil || res.Cache == "hit" {
		return nil
	}
	r := &usage.Run{CPUTimeMS: res.CPUTimeMS, MemoryBytes: res.Limits.MemoryBytes, DurationMS: res.DurationMS}
	if res.Egress != nil {
		r.EgressBytes = res.Egress.BytesUp + res.Egress.BytesDown
	}
	return r
}

func (s *Service) observeRefusal(label, reason string) {
	if o, ok := s.cfg.Observer.(UsageObserver); ok && label != "" {
		o.ObserveRefusal(label, reason)
	}
}

// Usage is the caller's own use, by window: ErrNoTenant for a caller
// without a token label.
func (d *Door) Usage() (TenantUsage, error) {
	if d.c.Label == "" {
		return TenantUsage{}, ErrNoTenant
	}
	u := d.svc.usage.Tenant(d.c.Label)
	st := d.svc.storedOf(d.c.Owner, d.c.Label, d.c.OtherReplicas)
	u.Stored = &st
	return u, nil
}

// UsageAll is every token's use, by label: for the operator (a local
// caller, or a token the policy lists under tenants.operators), else
// ErrNotOperator.
func (d *Door) UsageAll() ([]TenantUsage, error) {
	if d.c.Remote && !d.svc.pol.Tenants.IsOperator(d.c.Label) {
		return nil, ErrNotOperator
	}
	return d.svc.withStored(d.svc.usage.All()), nil
}
