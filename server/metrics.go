package server

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/sandbox"
)

// Metrics are the server's Prometheus metrics, in base units with the
// sandboxrun_ prefix. They implement sandboxrun.Observer, so the Service
// reports each request's outcome itself.
type Metrics struct {
	reg        *prometheus.Registry
	executions *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	queueWait  prometheus.Histogram
	http       *prometheus.CounterVec
	cache      *prometheus.CounterVec
	tenant     tenantMetrics
}

var (
	_ sandboxrun.Observer      = (*Metrics)(nil)
	_ sandboxrun.CacheObserver = (*Metrics)(nil)
	_ sandboxrun.QueueObserver = (*Metrics)(nil)
	_ sandboxrun.UsageObserver = (*Metrics)(nil)
)

// NewMetrics registers the metrics on a registry of their own, with the Go
// runtime and process collectors beside them.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxrun_executions_total",
			Help: "Execution requests by operator skill (\"\" for an uploaded skill or none), skill source (operator, uploaded, \"\") and outcome (success, failure, timeout, oom, refused, canceled, error).",
		}, []string{"skill", "source", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sandboxrun_execution_duration_seconds",
			Help:    "Time from a request's admission to its Result, by outcome.",
			Buckets: []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		}, []string{"outcome"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sandboxrun_queue_wait_seconds",
			Help:    "Time a request waited for an execution slot.",
			Buckets: []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		http: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxrun_http_requests_total",
			Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandboxrun_cache_requests_total",
			Help: "Runs the result cache could answer, by result (hit, miss).",
		}, []string{"result"}),
	}
	m.tenant = newTenantMetrics()
	m.reg.MustRegister(m.executions, m.duration, m.queueWait, m.http, m.cache,
		m.tenant.runs, m.tenant.cpu, m.tenant.memory, m.tenant.egress, m.tenant.refused,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveCache implements sandboxrun.CacheObserver.
func (m *Metrics) ObserveCache(hit bool) {
	result := "miss"
	if hit {
		result = "hit"
	}
	m.cache.WithLabelValues(result).Inc()
}

// Observe implements sandboxrun.Observer. Its labels hold no text a
// caller chose: the Service names operator skills only (Observed).
func (m *Metrics) Observe(o sandboxrun.Observed) {
	m.executions.WithLabelValues(o.Skill, o.Source, string(o.Outcome)).Inc()
	m.duration.WithLabelValues(string(o.Outcome)).Observe(o.Duration.Seconds())
}

// ObserveQueue implements sandboxrun.QueueObserver.
func (m *Metrics) ObserveQueue(wait time.Duration) { m.queueWait.Observe(wait.Seconds()) }

// watchLoad exports the Service's runs in flight and queued.
func (m *Metrics) watchLoad(load func() sandboxrun.Load) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sandboxrun_executions_in_flight",
			Help: "Executions running now.",
		}, func() float64 { return float64(load().Running) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sandboxrun_queue_length",
			Help: "Requests waiting for an execution slot.",
		}, func() float64 { return float64(load().Queued) }),
	)
}

// watchPool exports the warm pool's figures.
func (m *Metrics) watchPool(stats func() sandbox.PoolStats) {
	gauge := func(name, help string, v func(sandbox.PoolStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(stats()) })
	}
	counter := func(name, help string, v func(sandbox.PoolStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return v(stats()) })
	}
	m.reg.MustRegister(
		gauge("sandboxrun_warm_pool_size", "Cap on the warm containers kept in all (0: off).",
			func(p sandbox.PoolStats) float64 { return float64(p.Size) }),
		gauge("sandboxrun_warm_pool_ready", "Warm containers idle or starting now.",
			func(p sandbox.PoolStats) float64 { return float64(p.Ready) }),
		counter("sandboxrun_warm_pool_hits_total", "Runs that got a warm container.",
			func(p sandbox.PoolStats) float64 { return float64(p.Hits) }),
		counter("sandboxrun_warm_pool_misses_total", "Runs that could have used the pool but started a cold container.",
			func(p sandbox.PoolStats) float64 { return float64(p.Misses) }),
	)
}

func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
