package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/policy"
)

func TestWarmFlagsResolve(t *testing.T) {
	tests := []struct {
		name     string
		policy   string
		args     []string
		wantMax  int
		wantIdle time.Duration
		err      string
	}{
		{name: "on by default", policy: "network: none\n", wantMax: 4, wantIdle: 5 * time.Minute},
		{name: "the policy's", policy: "docker:\n  warm_pool: {max: 8, idle: 1m}\n", wantMax: 8, wantIdle: time.Minute},
		{name: "the policy turns it off", policy: "docker:\n  warm_pool: {max: 0}\n", wantMax: 0, wantIdle: 5 * time.Minute},
		{name: "a flag wins", policy: "docker:\n  warm_pool: {max: 8, idle: 1m}\n", args: []string{"--warm-pool", "0", "--warm-idle", "2s"}, wantMax: 0, wantIdle: 2 * time.Second},
		{name: "negative", policy: "network: none\n", args: []string{"--warm-pool", "-1"}, err: "--warm-pool -1: use 0 (off) to 64"},
		{name: "too many", policy: "network: none\n", args: []string{"--warm-pool", "65"}, err: "--warm-pool 65"},
		{name: "idle zero", policy: "network: none\n", args: []string{"--warm-idle", "0s"}, err: "--warm-idle 0s: use a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, err := policy.ParsePolicy("p.yaml", []byte(tt.policy))
			require.NoError(t, err)
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			w := addWarmFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			gotMax, gotIdle, err := w.resolve(pol)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantMax, gotMax)
			require.Equal(t, tt.wantIdle, gotIdle)
		})
	}
}

// --max-queued 0 is no queue, where the Service's zero Config is the
// default one.
func TestMaxQueuedZeroIsNoQueue(t *testing.T) {
	require.Equal(t, sandboxrun.NoQueue, queueSize(0))
	require.Equal(t, 5, queueSize(5))
}
