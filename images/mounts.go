package images

import (
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// mountsUnder lists the mount points at or below dir found in a
// /proc/self/mountinfo stream, deepest first so they can be unmounted in
// that order.
func mountsUnder(r io.Reader, dir string) ([]string, error) {
	infos, err := mountinfo.GetMountsFromReader(r, mountinfo.PrefixFilter(filepath.Clean(dir)))
	if err != nil {
		return nil, err
	}
	found := make([]string, 0, len(infos))
	for _, m := range infos {
		found = append(found, m.Mountpoint)
	}
	sort.SliceStable(found, func(i, j int) bool {
		return strings.Count(found[i], "/") > strings.Count(found[j], "/")
	})
	return found, nil
}
