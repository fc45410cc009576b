package images

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMountsUnder(t *testing.T) {
	mountinfo := strings.Join([]string{
		"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw",
		"43 27 0:39 / /var/tmp/sbx-1/rootfs/proc rw,relatime - proc proc rw",
		"44 27 0:40 / /var/tmp/sbx-1/rootfs/sys rw,relatime - sysfs sysfs rw",
		"45 44 0:41 / /var/tmp/sbx-1/rootfs/sys/fs/cgroup rw - cgroup2 cgroup2 rw",
		"46 27 0:42 / /var/tmp/sbx-10/rootfs/proc rw - proc proc rw",
		`47 27 0:43 / /var/tmp/sbx-1/with\040space rw - tmpfs tmpfs rw`,
		"48 27 0:44 / /var/tmp/sbx-1 rw - tmpfs tmpfs rw",
	}, "\n")
	got, err := mountsUnder(strings.NewReader(mountinfo), "/var/tmp/sbx-1/")
	require.NoError(t, err)
	require.Equal(t, []string{
		"/var/tmp/sbx-1/rootfs/sys/fs/cgroup",
		"/var/tmp/sbx-1/rootfs/proc",
		"/var/tmp/sbx-1/rootfs/sys",
		"/var/tmp/sbx-1/with space",
		"/var/tmp/sbx-1",
	}, got, "deepest first, sibling prefix sbx-10 excluded")
}
