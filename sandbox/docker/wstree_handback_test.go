package docker

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// TestReadTreeRecentUntouchedFileIsNoChange: a file put in the workspace
// just before the run (too recent for the quick check) comes back with the
// same bytes; the hand-back rewrites it but does not report it, so a host is
// not told to fetch an input it just uploaded. A recent file whose bytes or
// mode did change is still reported.
func TestReadTreeRecentUntouchedFileIsNoChange(t *testing.T) {
	tests := []struct {
		name       string
		host, back string
		hostMode   os.FileMode
		want       []sandbox.FileChange
	}{
		{"same bytes", "a,b\n", "a,b\n", 0o644, []sandbox.FileChange{}},
		{"same size, other bytes", "a,b\n", "c,d\n", 0o644, []sandbox.FileChange{
			{Path: "f", Change: sandbox.FileModified, Size: 4, SHA256: sha256Hex("c,d\n")},
		}},
		{"same bytes, other mode", "a,b\n", "a,b\n", 0o600, []sandbox.FileChange{
			{Path: "f", Change: sandbox.FileModified, Size: 4, SHA256: sha256Hex("a,b\n")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			p := filepath.Join(root, "f")
			require.NoError(t, os.WriteFile(p, []byte(tt.host), tt.hostMode))
			require.NoError(t, os.Chmod(p, tt.hostMode))
			changes, err := handBack(t, tarOf(t, entry{name: "f", body: tt.back}), root, was("f"), time.Now())
			require.NoError(t, err)
			require.Equal(t, tt.want, changes)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.Equal(t, tt.back, string(b))
		})
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestWriteTreeLeavesOutLinksThatClimbOut: the engine refuses a copy that
// holds a relative link leaving the folder sandbox.Copied into ("invalid
// symlink"); such a link a run left is kept on the host but not sandbox.Copied, so
// it can neither fail later runs nor be deleted by their hand-back.
func TestWriteTreeLeavesOutLinksThatClimbOut(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	links := map[string]string{
		"up":          "..",
		"far":         "../../../../../..",
		"sub/up2":     "../..",
		"sub/sibling": "../f",
		"self":        ".",
		"abs":         "/etc/passwd",
		"sub/back":    "../sub/../f",
	}
	for name, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(src, name)))
	}
	var buf bytes.Buffer
	seen, err := sandbox.WriteTree(&buf, src, 65532, 65532)
	require.NoError(t, err)
	require.Equal(t, []string{"abs", "self", "sub", "sub/back", "sub/sibling"}, keys(seen))

	tests := []struct {
		rel, target string
		out         bool
	}{
		{"up", "..", true},
		{"a/b", "../..", true},
		{"a/b", "..", false},
		{"a/b", "../../w/x", false}, // out and back in, lexically as the engine checks
		{"x", "/", false},
		{"x", "./y/../../z", true},
		{"x", "y/../z", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.out, sandbox.ClimbsOut(tt.rel, tt.target), "%s -> %s", tt.rel, tt.target)
	}
}

// TestHandBackLongLinkName: a link whose name is near NAME_MAX is handed
// back (its temporary name is not derived from its own).
func TestHandBackLongLinkName(t *testing.T) {
	root := t.TempDir()
	long := strings.Repeat("l", 250)
	changes, err := handBack(t, tarOf(t, entry{name: long, link: "target"}), root, nil, time.Now())
	require.NoError(t, err, "a link whose name is near NAME_MAX is handed back")
	require.Equal(t, []sandbox.FileChange{{Path: long, Change: sandbox.FileCreated}}, changes)
}

// TestDiffTreeDeletedFolder: a folder the script removed is one whiteout,
// and a folder it replaced by a file is that file; the owner's applier
// removes what they held.
func TestDiffTreeDeletedFolder(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"gone/a", "gone/sub/b", "swap/c"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte("x"), 0o644))
	}
	before := was("gone/a", "gone/sub/b", "swap/c")
	for _, d := range []string{"gone", "gone/sub", "swap"} {
		before[d] = sandbox.Copied{Typ: tar.TypeDir, Perm: 0o755}
	}
	var layer bytes.Buffer
	require.NoError(t, diffTree(tarOf(t, entry{name: "swap", body: "file"}), &layer, before, time.Now()))
	var names []string
	tr := tar.NewReader(&layer)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	require.Equal(t, []string{"swap", ".wh.gone"}, names)
}

// TestDiffTreeWriteInTheNextSecond: a file written in the sandbox less
// than a second after its host copy's time (tar keeps whole seconds) is a
// change, not the quick check's "unchanged".
func TestDiffTreeWriteInTheNextSecond(t *testing.T) {
	host := time.Now().Add(-time.Minute).Truncate(time.Second).Add(700 * time.Millisecond)
	before := map[string]sandbox.Copied{"f": {Typ: tar.TypeReg, Size: 3, Perm: 0o644, MTime: host}}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3, ModTime: host.Add(500 * time.Millisecond).Truncate(time.Second)}))
	_, err := tw.Write([]byte("new"))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	var layer bytes.Buffer
	require.NoError(t, diffTree(&buf, &layer, before, time.Now()))
	h, err := tar.NewReader(&layer).Next()
	require.NoError(t, err)
	require.Equal(t, "f", h.Name)
}

// TestHandBackLeavesOutWhiteoutNames: a file the script named as a
// whiteout is not handed back, so it deletes nothing on the host.
func TestHandBackLeavesOutWhiteoutNames(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "keep"), []byte("keep"), 0o644))
	tree := tarOf(t, entry{name: ".wh.keep", body: "forged"}, entry{name: "d/", dir: true}, entry{name: "d/.wh..wh..opq", body: "forged"})
	changes, err := handBack(t, tree, root, nil, time.Now())
	require.NoError(t, err)
	require.Empty(t, changes)
	require.FileExists(t, filepath.Join(root, "keep"))
	require.NoFileExists(t, filepath.Join(root, ".wh.keep"))
}
