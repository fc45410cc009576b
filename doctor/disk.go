package doctor

import (
	"fmt"
	"math"

	"github.com/sandboxrun/sandboxrun/internal/size"
)

// lowDisk is the free space below which a place gets a warning: a runner
// image, its /usr copy and a skill image or two take about that much.
const lowDisk = 2 << 30

// place is a folder sandboxrun (or the engine) writes to.
type place struct {
	what, path string
}

// judgeDisk reports the free space of each place; free is the statfs of
// this platform (freeBytes), a parameter so tests need no real disk.
func judgeDisk(places []place, free func(string) (uint64, error)) []Check {
	var checks []Check
	for _, p := range places {
		name := "disk_" + p.what
		if p.path == "" {
			continue
		}
		n, err := free(p.path)
		if err != nil {
			checks = append(checks, warn(AreaHost, name, fmt.Sprintf("cannot read the free space of %s: %v", p.path, err),
				"check it on the host that holds it (df -h)"))
			continue
		}
		shown := size.Format(int64(min(n, math.MaxInt64))) // no disk holds 8 EiB
		if n < lowDisk {
			checks = append(checks, warn(AreaHost, name, fmt.Sprintf("%s free at %s", shown, p.path),
				"free some space: sandboxrun images prune, sandboxrun reap, docker system prune"))
			continue
		}
		checks = append(checks, pass(AreaHost, name, fmt.Sprintf("%s free at %s", shown, p.path)))
	}
	return checks
}
