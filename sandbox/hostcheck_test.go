package sandbox

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
)

func TestCheckHostCPUs(t *testing.T) {
	tests := []struct {
		name    string
		cpus    float64
		host    HostCapacity
		refused string // "" when allowed
	}{
		{"whole host, within", 2, HostCapacity{CPUs: 2}, ""},
		{"whole host, above", 2.5, HostCapacity{CPUs: 2}, "cpus 2.5 (max_cpus / --cpus) is above the engine host's 2 CPUs; ask for at most 2"},
		{"a share, within", 3.5, HostCapacity{CPUs: 4, MilliCPUs: 3500}, ""},
		{"a share, above though under the whole CPUs", 3.6, HostCapacity{CPUs: 4, MilliCPUs: 3500},
			"cpus 3.6 (max_cpus / --cpus) is above the engine host's 3.5 CPUs; ask for at most 3.5"},
		{"a thousandth above", 0.501, HostCapacity{MilliCPUs: 500}, "ask for at most 0.5"},
		{"unknown", 4096, HostCapacity{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckHost(&Spec{Limits: policy.Limits{CPUs: tt.cpus}}, tt.host)
			if tt.refused == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrBeyondHost)
			require.ErrorIs(t, err, ErrInvalidSpec, "nothing started")
			require.ErrorContains(t, err, tt.refused)
		})
	}
}
