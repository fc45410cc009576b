package usage

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// clock is a settable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestQuotaRefusesAndNextWindowLetsIn(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 10, 0, 50, 0, time.UTC)}
	quotas := func(label string) map[time.Duration]Limits {
		if label == "ci" {
			return map[time.Duration]Limits{time.Minute: {Runs: 2, CPUSeconds: 1}}
		}
		return nil
	}
	s, err := Open(Options{Windows: []time.Duration{time.Minute, time.Hour}, Quotas: quotas, Now: c.now})
	require.NoError(t, err)

	a, err := s.Begin("ci")
	require.NoError(t, err)
	b, err := s.Begin("ci")
	require.NoError(t, err, "two runs in flight fit runs: 2")
	_, err = s.Begin("ci")
	var qe *QuotaError
	require.ErrorAs(t, err, &qe, "a third run in flight passes runs: 2")
	require.True(t, errors.Is(err, ErrQuota))
	require.Equal(t, QuotaRuns, qe.Quota)
	require.Equal(t, 10*time.Second, qe.RetryAfter, "the minute ends in 10s")
	require.NoError(t, a.End(&Run{CPUTimeMS: 400, MemoryBytes: 512 << 20, DurationMS: 2000}))
	require.NoError(t, a.End(&Run{CPUTimeMS: 400}), "a second End counts nothing")
	require.NoError(t, b.End(nil), "a run with no Result frees its place")

	_, err = s.Begin("other")
	require.NoError(t, err, "another label has no quota")

	k, err := s.Begin("ci")
	require.NoError(t, err)
	require.NoError(t, k.End(&Run{CPUTimeMS: 700}))
	_, err = s.Begin("ci")
	require.ErrorAs(t, err, &qe)
	require.Equal(t, QuotaRuns, qe.Quota, "runs 2 ended: the runs quota is first")

	c.t = c.t.Add(15 * time.Second)
	_, err = s.Begin("ci")
	require.NoError(t, err, "the next minute lets runs in")

	u := s.Tenant("ci")
	require.Equal(t, int64(2), u.Total.Runs)
	require.Equal(t, int64(1100), u.Total.CPUTimeMS)
	require.InDelta(t, 1.0, u.Total.MemoryGiBSeconds, 1e-9, "512Mi for 2s is 1 GiB-second")
	require.Equal(t, int64(0), u.Windows[0].Used.Runs, "the minute window is fresh")
	require.Equal(t, int64(2), u.Windows[1].Used.Runs, "the hour window kept both")
	require.Equal(t, int64(2), u.Windows[0].Limits.Runs)
}

func TestCPUQuota(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	s, err := Open(Options{Windows: []time.Duration{time.Hour}, Now: c.now,
		Quotas: func(string) map[time.Duration]Limits { return map[time.Duration]Limits{time.Hour: {CPUSeconds: 1}} }})
	require.NoError(t, err)
	k, err := s.Begin("a")
	require.NoError(t, err)
	require.NoError(t, k.End(&Run{CPUTimeMS: 1000}), "a started run is never cut short: it ends and counts")
	_, err = s.Begin("a")
	var qe *QuotaError
	require.ErrorAs(t, err, &qe)
	require.Equal(t, QuotaCPUSeconds, qe.Quota)
	require.Contains(t, qe.Error(), "cpu_seconds")
	require.Equal(t, int64(3600), qe.RetryAfterSeconds())
}

func TestStateSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFile)
	c := &clock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	o := Options{Path: path, Windows: []time.Duration{time.Hour}, Now: c.now}
	s, err := Open(o)
	require.NoError(t, err)
	k, err := s.Begin("a")
	require.NoError(t, err)
	require.NoError(t, k.End(&Run{CPUTimeMS: 5, MemoryBytes: 1 << 30, DurationMS: 1000}))

	again, err := Open(o)
	require.NoError(t, err)
	u := again.Tenant("a")
	require.Equal(t, int64(1), u.Windows[0].Used.Runs)
	require.Equal(t, int64(5), u.Total.CPUTimeMS)
	require.InDelta(t, 1.0, u.Total.MemoryGiBSeconds, 1e-9)

	r, err := ReadFile(path, o.Windows, nil)
	require.NoError(t, err)
	require.Len(t, r.All(), 1)
	_, err = ReadFile(filepath.Join(t.TempDir(), "none.json"), o.Windows, nil)
	require.Error(t, err)
}

func TestMemoryAndEgressQuotas(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	limits := map[string]Limits{"mem": {MemoryGiBSeconds: 1}, "egress": {EgressBytes: 100}}
	s, err := Open(Options{Windows: []time.Duration{time.Hour}, Now: c.now,
		Quotas: func(label string) map[time.Duration]Limits { return map[time.Duration]Limits{time.Hour: limits[label]} }})
	require.NoError(t, err)
	for label, r := range map[string]Run{
		"mem":    {MemoryBytes: 1 << 30, DurationMS: 999},
		"egress": {EgressBytes: 99},
	} {
		k, err := s.Begin(label)
		require.NoError(t, err)
		require.NoError(t, k.End(&r))
		_, err = s.Begin(label)
		require.NoError(t, err, "%s: below its quota", label)
	}
	for label, r := range map[string]Run{
		"mem":    {MemoryBytes: 1 << 30, DurationMS: 1},
		"egress": {EgressBytes: 1},
	} {
		k, err := s.Begin(label)
		require.NoError(t, err)
		require.NoError(t, k.End(&r))
	}
	var qe *QuotaError
	_, err = s.Begin("mem")
	require.ErrorAs(t, err, &qe)
	require.Equal(t, QuotaMemory, qe.Quota)
	_, err = s.Begin("egress")
	require.ErrorAs(t, err, &qe)
	require.Equal(t, QuotaEgressBytes, qe.Quota)
	require.Equal(t, int64(100), s.Tenant("egress").Total.EgressBytes)
}

func TestCheckStored(t *testing.T) {
	require.NoError(t, CheckStored("a", 0, 1<<40, 1), "no limit")
	require.NoError(t, CheckStored("a", 100, 99, 0), "below the limit")
	require.NoError(t, CheckStored("a", 100, 60, 40), "a known size that fits")
	err := CheckStored("a", 100, 60, 41)
	var qe *QuotaError
	require.ErrorAs(t, err, &qe, "a known size past the limit")
	require.True(t, errors.Is(err, ErrQuota))
	require.Equal(t, QuotaStoredBytes, qe.Quota)
	require.Equal(t, int64(0), qe.RetryAfterSeconds(), "no clock frees stored bytes")
	require.Contains(t, qe.Error(), "delete sessions, snapshots or uploads")
	require.ErrorAs(t, CheckStored("a", 100, 100, 0), &qe, "at the limit, an unknown size is refused")
}
