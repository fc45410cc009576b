package sandboxrun_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun"
)

func TestUsageEveryMinIsChecked(t *testing.T) {
	for name, c := range map[string]struct {
		min time.Duration
		ok  bool
	}{
		"default":         {0, true},
		"longer":          {5 * time.Second, true},
		"below the floor": {100 * time.Millisecond, false},
		"negative":        {-time.Second, false},
	} {
		t.Run(name, func(t *testing.T) {
			svc, err := sandboxrun.New(sandboxrun.Config{SkillRoots: []string{"skills"}, UsageEveryMin: c.min})
			if c.ok {
				require.NoError(t, err)
				require.NoError(t, svc.Close())
				return
			}
			require.ErrorContains(t, err, "UsageEveryMin")
		})
	}
}
