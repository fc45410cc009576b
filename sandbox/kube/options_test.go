package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// client-go's default rate limit would hold a runner to about a Pod a
// second; a config that sets its own keeps it, and the caller's config is
// not changed.
func TestRESTConfigRateLimit(t *testing.T) {
	for _, tc := range []struct {
		qps       float32
		burst     int
		wantQPS   float32
		wantBurst int
	}{
		{0, 0, defaultQPS, defaultBurst},
		{7, 9, 7, 9},
	} {
		in := &rest.Config{Host: "https://127.0.0.1:1", QPS: tc.qps, Burst: tc.burst}
		var s settings
		WithRESTConfig(in)(&s)
		require.Equal(t, tc.wantQPS, s.restConfig.QPS)
		require.Equal(t, tc.wantBurst, s.restConfig.Burst)
		require.Equal(t, tc.qps, in.QPS, "the caller's config is its own")
	}
}
