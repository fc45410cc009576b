package docker

import (
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
	sessionstore "github.com/sandboxrun/sandboxrun/session"
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
			changes, err := readTree(tarOf(t, entry{name: "f", body: tt.back}), root, map[string]bool{"f": true}, time.Now())
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
// holds a relative link leaving the folder copied into ("invalid
// symlink"); such a link a run left is kept on the host but not copied, so
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
	require.Equal(t, map[string]bool{"sub/sibling": true, "self": true, "abs": true, "sub/back": true}, seen)

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

// TestHandBackTempNamesAreTheSessionStoresReservedNames: a session lists
// none of the hand-back's temporary files and removes them after a crash
// only because their names carry the store's reserved prefix.
func TestHandBackTempNamesAreTheSessionStoresReservedNames(t *testing.T) {
	require.Equal(t, sessionstore.TempPrefix, tempPrefix)
	root := t.TempDir()
	long := strings.Repeat("l", 250)
	changes, err := readTree(tarOf(t, entry{name: long, link: "target"}), root, nil, time.Now())
	require.NoError(t, err, "a link whose name is near NAME_MAX is handed back")
	require.Equal(t, []sandbox.FileChange{{Path: long, Change: sandbox.FileCreated}}, changes)
}
