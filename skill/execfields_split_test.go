package skill

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitPackages(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"requests pandas", []string{"requests", "pandas"}},
		{"requests, pandas,numpy", []string{"requests", "pandas", "numpy"}},
		{"foo>=1,<2 bar", []string{"foo>=1,<2", "bar"}},
		{"foo>=1, <2, bar==3", []string{"foo>=1,<2", "bar==3"}},
		{"foo >= 1 bar", []string{"foo>=1", "bar"}},
		{"foo[extra]~=1.4,!=1.4.2", []string{"foo[extra]~=1.4,!=1.4.2"}},
		{"  ", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			require.Equal(t, tt.want, splitPackages(tt.in))
		})
	}
}
