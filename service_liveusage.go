package sandboxrun

import (
	"fmt"
	"time"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// DefaultUsageEveryMin is the shortest interval between a run's live usage
// samples a caller may ask unless Config.UsageEveryMin says otherwise.
const DefaultUsageEveryMin = time.Second

// usageEveryMin checks and defaults Config.UsageEveryMin.
func usageEveryMin(d time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return DefaultUsageEveryMin, nil
	case d < sandbox.MinUsageEvery:
		return 0, fmt.Errorf("configure service: UsageEveryMin %s is below %s: give 0 for the default (%s) or a longer interval", d, sandbox.MinUsageEvery, DefaultUsageEveryMin)
	}
	return d, nil
}

// usageEvery is the interval a run's live usage is sampled at: what the
// request asked, never more often than the operator allows; 0 is none.
func (s *Service) usageEvery(asked time.Duration) time.Duration {
	if asked <= 0 {
		return 0
	}
	return max(asked, s.cfg.UsageEveryMin)
}
