package skillstore

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/skill"
)

var errNoBuilds = errors.New("no builds for uploads")

// An upload that declares packages is judged by the package check, with
// what it declares; one that declares none is not; a declaration that
// cannot be read is invalid, named by the archive's paths.
func TestPackageCheck(t *testing.T) {
	pep723 := ent{name: "scripts/dep.py", body: "# /// script\n# dependencies = [\"tabulate\"]\n# ///\nprint(1)\n"}
	tests := []struct {
		name    string
		ents    []ent
		checked []string // the packages the check saw; nil: not called
		err     error
		says    string
	}{
		{name: "no packages", ents: demo("", "plain", "")},
		{name: "python_packages", ents: demo("", "py", "metadata:\n  python_packages: \"tabulate\"\n"), checked: []string{"tabulate"}, err: errNoBuilds},
		{name: "system_packages", ents: demo("", "sys", "metadata:\n  system_packages: \"bc\"\n"), checked: []string{"bc"}, err: errNoBuilds},
		{name: "a script's PEP 723 dependencies", ents: append(demo("", "pep", ""), pep723), checked: []string{"tabulate"}, err: errNoBuilds},
		{name: "an unreadable declaration", ents: demo("", "bad", "metadata:\n  python_packages: \"not a name!\"\n"), err: ErrInvalid, says: "bad/SKILL.md"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var checked []string
			s, root := openStore(t, Limits{}, WithPackageCheck(func(name string, d skill.Deps) error {
				checked = append(append(checked, d.Python...), d.System...)
				return errNoBuilds
			}))
			_, err := put(t, s, ownerA, FormatTar, tarOf(t, tc.ents))
			require.Equal(t, tc.checked, checked)
			if tc.err == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.err)
			require.Contains(t, err.Error(), tc.says)
			require.NotContains(t, err.Error(), root, "no folder of the server")
			requireNothingKept(t, root)
		})
	}
}
