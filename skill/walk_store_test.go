package skill

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A store of uploaded skills under a skills root (its uploads nest
// OWNER/NAME/HEX/NAME/SKILL.md) is never searched: no upload becomes an
// operator skill, by listing or by name.
func TestDiscoverSkipsUploadStores(t *testing.T) {
	root := t.TempDir()
	writeSkill(t, root, "own", doc("name: own\ndescription: The operator's.\n", "body"), nil)
	store := filepath.Join(root, "uploads")
	writeSkill(t, filepath.Join(store, "owner1", "tenant", "abc"), "tenant", doc("name: tenant\ndescription: An upload.\n", "body"), nil)
	require.NoError(t, os.WriteFile(filepath.Join(store, UploadStoreMarker), nil, 0o600))

	for _, tc := range []struct {
		name  string
		roots []string
		want  []string
	}{
		{name: "store below the root", roots: []string{root}, want: []string{"own"}},
		{name: "store as a root", roots: []string{store}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skills, notes := Discover(tc.roots...)
			var names []string
			for _, s := range skills {
				names = append(names, s.Manifest.Name)
			}
			require.Equal(t, tc.want, names)
			require.Len(t, notes, 1)
			require.ErrorContains(t, notes[0], "store of uploaded skills")
			_, err := Locate(tc.roots, "tenant")
			require.ErrorIs(t, err, ErrSkillNotFound)
		})
	}
}
