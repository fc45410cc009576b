package images

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTrimRootfs(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	hostResolv := filepath.Join(outside, "resolv.conf")
	require.NoError(t, os.WriteFile(hostResolv, []byte("nameserver 10.0.0.1\n"), 0o644))

	writeTree(t, root, map[string]string{
		"var/cache/apt/archives/python3_3.11_amd64.deb": "deb",
		"var/cache/apt/archives/partial/x.deb":          "deb",
		"var/cache/apt/pkgcache.bin":                    "bin",
		"var/lib/apt/lists/deb.debian.org_Packages":     "idx",
		"var/log/dpkg.log":                              "log",
		"var/log/apt/history.log":                       "log",
		"usr/share/doc/git/copyright":                   "GPL",
		"usr/share/doc/git/changelog.gz":                "log",
		"usr/share/man/man1/git.1.gz":                   "man",
		"usr/share/locale/locale.alias":                 "alias",
		"usr/share/locale/de/LC_MESSAGES/git.mo":        "mo",
		"usr/bin/python3":                               "elf",
		"etc/hostname":                                  "buildhost\n",
	})
	require.NoError(t, os.Symlink(hostResolv, filepath.Join(root, "etc/resolv.conf")))
	require.NoError(t, os.Symlink("git", filepath.Join(root, "usr/share/doc/git-man")))

	require.NoError(t, trimRootfs(root))

	gone := []string{
		"var/cache/apt/archives/python3_3.11_amd64.deb", "var/cache/apt/archives/partial",
		"var/cache/apt/pkgcache.bin", "var/lib/apt/lists/deb.debian.org_Packages",
		"var/log/dpkg.log", "var/log/apt/history.log",
		"usr/share/doc/git/changelog.gz", "usr/share/man/man1", "usr/share/locale/de",
	}
	for _, rel := range gone {
		_, err := os.Lstat(filepath.Join(root, rel))
		require.ErrorIs(t, err, os.ErrNotExist, rel)
	}
	kept := []string{
		"var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc/git/copyright",
		"usr/share/doc/git-man", "usr/share/locale/locale.alias", "usr/bin/python3",
	}
	for _, rel := range kept {
		_, err := os.Lstat(filepath.Join(root, rel))
		require.NoError(t, err, rel)
	}

	// resolv.conf was a link to a host file: replaced by an empty regular
	// file, and the host file left alone.
	fi, err := os.Lstat(filepath.Join(root, "etc/resolv.conf"))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())
	require.Zero(t, fi.Size())
	host, err := os.ReadFile(hostResolv)
	require.NoError(t, err)
	require.Equal(t, "nameserver 10.0.0.1\n", string(host))

	hostname, err := os.ReadFile(filepath.Join(root, "etc/hostname"))
	require.NoError(t, err)
	require.Empty(t, hostname)
	slim, err := os.ReadFile(filepath.Join(root, "etc/dpkg/dpkg.cfg.d/90sandboxrun-slim"))
	require.NoError(t, err)
	require.Contains(t, string(slim), "path-include /usr/share/doc/*/copyright")
	apt, err := os.ReadFile(filepath.Join(root, "etc/apt/apt.conf.d/90sandboxrun"))
	require.NoError(t, err)
	require.Contains(t, string(apt), `APT::Install-Recommends "false";`)
}

func TestTrimRootfsRefusesSymlinkedDirectories(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"archives/host.deb": "host file"})
	require.NoError(t, os.MkdirAll(filepath.Join(root, "var/cache"), 0o755))
	// var/cache/apt points out of the root: following it would delete
	// outside/archives/host.deb.
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "var/cache/apt")))

	err := trimRootfs(root)
	require.ErrorContains(t, err, "is a symlink")
	_, statErr := os.Stat(filepath.Join(outside, "archives/host.deb"))
	require.NoError(t, statErr)
}

func TestJoinInRoot(t *testing.T) {
	root := t.TempDir()
	for _, rel := range []string{"../etc", "/etc/passwd", ".."} {
		t.Run(rel, func(t *testing.T) {
			_, err := joinInRoot(root, rel)
			require.ErrorContains(t, err, "not inside the root filesystem")
		})
	}
	p, err := joinInRoot(root, "a/b/../c")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "a/c"), p)
}
