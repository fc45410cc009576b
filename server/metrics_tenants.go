package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandboxrun/sandboxrun"
)

// tenantMetrics are the usage figures by token label: the tokens file's
// labels (or ones derived from the tokens' digests), never a token and
// never a name a caller chose, so the label set is as small as the file.
type tenantMetrics struct {
	runs, cpu, memory, egress *prometheus.CounterVec
	refused                   *prometheus.CounterVec
}

func newTenantMetrics() tenantMetrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	return tenantMetrics{
		runs:    counter("sandboxrun_tenant_runs_total", "Runs that ended with a Result, by token label.", "tenant"),
		cpu:     counter("sandboxrun_tenant_cpu_seconds_total", "CPU time of the runs (their Results' cpu_time_ms), by token label.", "tenant"),
		memory:  counter("sandboxrun_tenant_memory_gib_seconds_total", "Memory limit times wall time of the runs, by token label.", "tenant"),
		egress:  counter("sandboxrun_tenant_egress_bytes_total", "Bytes the runs' egress proxies carried both ways, by token label.", "tenant"),
		refused: counter("sandboxrun_tenant_refused_total", "Runs turned away before they started, by token label and reason (busy, or the quota's name: runs, cpu_seconds, memory_gib_seconds, egress_bytes); with stored_bytes also the session and upload operations it refused.", "tenant", "reason"),
	}
}

// ObserveUsage implements sandboxrun.UsageObserver.
func (m *Metrics) ObserveUsage(label string, r sandboxrun.UsageRun) {
	t := m.tenant
	t.runs.WithLabelValues(label).Inc()
	t.cpu.WithLabelValues(label).Add(float64(r.CPUTimeMS) / 1000)
	t.memory.WithLabelValues(label).Add(float64(r.MemoryBytes>>20) * float64(r.DurationMS) / 1024 / 1000)
	t.egress.WithLabelValues(label).Add(float64(r.EgressBytes))
}

// ObserveRefusal implements sandboxrun.UsageObserver.
func (m *Metrics) ObserveRefusal(label, reason string) {
	m.tenant.refused.WithLabelValues(label, reason).Inc()
}

// storedDesc is the gauge of each token's stored bytes, read at each
// scrape.
var storedDesc = prometheus.NewDesc("sandboxrun_tenant_stored_bytes",
	"Bytes a token's sessions (with what their snapshots alone hold) and uploads take now, by token label.", []string{"tenant"}, nil)

// storedCollector asks the Service at each scrape.
type storedCollector struct{ stored func() map[string]int64 }

func (c storedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- storedDesc }

func (c storedCollector) Collect(ch chan<- prometheus.Metric) {
	for label, n := range c.stored() {
		ch <- prometheus.MustNewConstMetric(storedDesc, prometheus.GaugeValue, float64(n), label)
	}
}

// watchStored exports each token's stored bytes.
func (m *Metrics) watchStored(stored func() map[string]int64) {
	m.reg.MustRegister(storedCollector{stored: stored})
}
