package server_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/server"
)

// TestAdmissionIsTheServiceCap: the Service admits as many executions as
// it runs (Config.MaxConcurrent, which `serve --max-running` sets), queues
// the next and turns the one after away, which the server answers 429.
func TestAdmissionIsTheServiceCap(t *testing.T) {
	for _, n := range []int{2, 0} {
		t.Run(strconv.Itoa(n), func(t *testing.T) { testAdmissionCap(t, n) })
	}
}

func testAdmissionCap(t *testing.T, maxConcurrent int) {
	eng := &engine{block: make(chan struct{}), started: make(chan struct{}, 16)}
	metrics := server.NewMetrics()
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: eng, Observer: metrics, MaxConcurrent: maxConcurrent,
		MaxQueued: 1, QueueWait: 10 * time.Second})
	require.NoError(t, err)
	n := svc.MaxConcurrent()
	if maxConcurrent == 0 {
		require.Equal(t, sandboxrun.DefaultMaxConcurrent, n, "the one default")
	}
	srv, err := server.New(server.Options{Service: svc})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	// Runs end before the server closes, even when a check below fails.
	var unblock sync.Once
	release := func() { unblock.Do(func() { close(eng.block) }) }
	t.Cleanup(release)
	f := fixture{url: ts.URL, eng: eng, metrics: metrics}
	body := `{"command": "echo hi"}`
	var wg sync.WaitGroup
	for range n + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			call(t, "POST", f.url+"/v1/skills/hello/exec", body)
		}()
	}
	for range n {
		<-eng.started
	}
	require.Eventually(t, func() bool {
		m := metricsText(t, f.url)
		return strings.Contains(m, "sandboxrun_queue_length 1") && strings.Contains(m, "sandboxrun_executions_in_flight "+strconv.Itoa(n))
	}, 5*time.Second, 10*time.Millisecond, "the Service's cap runs, one waits")
	require.Equal(t, http.StatusTooManyRequests, call(t, "POST", f.url+"/v1/skills/hello/exec", body).status)
	release()
	wg.Wait()
}

// TestNoQueueTurnsAwayAtOnce: with NoQueue (`serve --max-queued 0`) a run
// that finds every slot taken is a 429 at once, not a wait in a queue of
// the default size.
func TestNoQueueTurnsAwayAtOnce(t *testing.T) {
	eng := &engine{block: make(chan struct{}), started: make(chan struct{}, 4)}
	svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: eng,
		MaxConcurrent: 1, MaxQueued: sandboxrun.NoQueue, QueueWait: 10 * time.Minute})
	require.NoError(t, err)
	srv, err := server.New(server.Options{Service: svc})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	var unblock sync.Once
	release := func() { unblock.Do(func() { close(eng.block) }) }
	t.Cleanup(release)
	body := `{"command": "echo hi"}`
	done := make(chan int, 1)
	go func() { done <- call(t, "POST", ts.URL+"/v1/skills/hello/exec", body).status }()
	<-eng.started
	// Answered while the first run still holds the only slot: a queued
	// run would wait here until QueueWait, past the test's timeout.
	r := call(t, "POST", ts.URL+"/v1/skills/hello/exec", body)
	require.Equal(t, http.StatusTooManyRequests, r.status, string(r.body))
	release()
	require.Equal(t, http.StatusOK, <-done)

	_, err = sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"../skills"}, Runner: eng, MaxQueued: sandboxrun.NoQueue - 1})
	require.ErrorContains(t, err, "NoQueue")
}
