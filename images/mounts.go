package images

import (
	"bufio"
	"io"
	"path/filepath"
	"sort"
	"strings"
)

// mountsUnder lists the mount points at or below dir found in a
// /proc/self/mountinfo stream, deepest first so they can be unmounted in
// that order.
func mountsUnder(mountinfo io.Reader, dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	var found []string
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			found = append(found, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(found, func(i, j int) bool {
		return strings.Count(found[i], "/") > strings.Count(found[j], "/")
	})
	return found, nil
}

// unescapeMountPath undoes the octal escapes (\040 for a space, \011, \012,
// \134) the kernel uses in mountinfo paths.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
