package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/server"
)

// startMetricsUploads is a server with uploads on, two tokens and metrics.
func startMetricsUploads(t *testing.T) string {
	t.Helper()
	pol, err := policy.ParsePolicy("p.yaml", []byte(strings.ReplaceAll(uploadsOn, "STORE", t.TempDir())))
	require.NoError(t, err)
	metrics := server.NewMetrics()
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: &engine{}, Policy: pol,
		Observer: metrics, SessionsRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	srv, err := server.New(server.Options{Service: svc, Tokens: server.NewTokens(tokenA, tokenB)})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

func metricsAs(t *testing.T, url, tok string) string {
	t.Helper()
	r := call(t, "GET", url+"/metrics", "", as(tok)...)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	return string(r.body)
}

// seriesCount counts the sandboxrun_ series of a metrics page.
func seriesCount(page string) int {
	n := 0
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "sandboxrun_") {
			n++
		}
	}
	return n
}

// TestMetricsShowNoTenantText: tenant A's upload and its run leave nothing
// A chose on the metrics page tenant B reads (not its name, not the
// session's id, not the script's name), A's run counts under skill "" and
// source "uploaded", and an operator skill keeps its name.
func TestMetricsShowNoTenantText(t *testing.T) {
	url := startMetricsUploads(t)
	const secret = "a-secret-project-name"
	upload(t, url, tokenA, "application/x-tar", skillTar(t, greeter(secret, "print(1)\n")), http.StatusCreated)
	sess := newSession(t, url, tokenA)
	r := call(t, "POST", url+"/v1/skills/"+secret+"/run", `{"script": "scripts/hi.py", "session": "`+sess+`"}`, as(tokenA)...)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r = call(t, "POST", url+"/v1/skills/"+secret+"@sha256:00/run", `{"script": "scripts/hi.py"}`, as(tokenA)...)
	require.NotEqual(t, http.StatusOK, r.status, "a pin to nothing is refused")
	r = call(t, "POST", url+"/v1/skills/hello/run", `{"script": "scripts/echo.py"}`, as(tokenB)...)
	require.Equal(t, http.StatusOK, r.status, string(r.body))

	page := metricsAs(t, url, tokenB)
	for _, chosen := range []string{secret, sess, "hi.py", tokenA} {
		require.NotContains(t, page, chosen, "the metrics page shows text tenant A chose")
	}
	require.Contains(t, page, `sandboxrun_executions_total{outcome="success",skill="",source="uploaded"} 1`)
	require.Contains(t, page, `sandboxrun_executions_total{outcome="refused",skill="",source=""} 1`)
	require.Contains(t, page, `sandboxrun_executions_total{outcome="success",skill="hello",source="operator"} 1`)
}

// TestMetricsSeriesDoNotGrowWithUploads: upload-run-delete cycles under
// new names leave as many series after ten cycles as after one.
func TestMetricsSeriesDoNotGrowWithUploads(t *testing.T) {
	url := startMetricsUploads(t)
	cycle := func(name string) {
		upload(t, url, tokenA, "application/x-tar", skillTar(t, greeter(name, "print(1)\n")), http.StatusCreated)
		r := call(t, "POST", url+"/v1/skills/"+name+"/run", `{"script": "scripts/hi.py"}`, as(tokenA)...)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		r = call(t, "DELETE", url+"/v1/skills/"+name, "", as(tokenA)...)
		require.Less(t, r.status, 300, string(r.body))
	}
	cycle("project-0")
	metricsAs(t, url, tokenB) // the page's own route is then counted too
	after1 := seriesCount(metricsAs(t, url, tokenB))
	for _, n := range []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"} {
		cycle("project-" + n)
	}
	page := metricsAs(t, url, tokenB)
	require.Equal(t, after1, seriesCount(page), "series grow with the names tenants choose")
	require.NotContains(t, page, "project-")
	require.Contains(t, page, `sandboxrun_executions_total{outcome="success",skill="",source="uploaded"} 10`)
}
