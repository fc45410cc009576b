package skillstore

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/skill"
)

// The store marks its folder, so that skill discovery never takes its
// uploads for the operator's skills.
func TestOpenMarksTheStore(t *testing.T) {
	root := t.TempDir()
	_, err := Open(root, Limits{})
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, skill.UploadStoreMarker))
	_, err = Open(root, Limits{})
	require.NoError(t, err, "a marked store opens again")
}
