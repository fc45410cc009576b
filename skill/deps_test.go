package skill

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCanonicalRequirement(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"requests", "requests"},
		{"  Requests  ", "requests"},
		{"Zope.Interface", "zope-interface"},
		{"typing_extensions>=4", "typing-extensions>=4"},
		{"pandas >= 2, < 3", "pandas<3,>=2"},
		{"pandas<3,>=2", "pandas<3,>=2"},
		{"pandas (>=2,<3)", "pandas<3,>=2"},
		{"rich[Jupyter, all]==13.7.1", "rich[all,jupyter]==13.7.1"},
		{"numpy==1.26.*", "numpy==1.26.*"},
		{"black~=24.1", "black~=24.1"},
		{"tomli; python_version < '3.11'", "tomli; python_version < '3.11'"},
		{`tomli ;python_version<"3.11"  and  os_name == "posix"`, `tomli; python_version<"3.11" and os_name == "posix"`},
		{"pkg===1.0+local", "pkg===1.0+local"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := CanonicalRequirement(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestCanonicalRequirementRefuses(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "is empty"},
		{"--index-url=http://evil", "pip option"},
		{"-rrequirements.txt", "pip option"},
		{"pkg @ https://example.com/pkg.whl", "direct reference"},
		{"pkg$(touch /tmp/x)", "version clause"},
		{"pkg; `id`", "environment marker"},
		{"pkg; python_version < '3", "environment marker"},
		{"pkg;", "environment marker"},
		{"pkg>=1 foo", "version clause"},
		{"pkg[extra", "without `]`"},
		{"pkg[ex tra]", "extra"},
		{"./local/path", "package name"},
		{"pkg\n--pre", "version clause"},
		{"pkg>=1|x", "version clause"},
		{string(make([]byte, 300)), "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := CanonicalRequirement(tt.in)
			require.ErrorIs(t, err, ErrInvalidRequirement)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestCheckSystemPackage(t *testing.T) {
	for _, ok := range []string{"python3-tabulate", "libxml2", "g++", "curl=7.88.1-10", "libc6:amd64"} {
		require.NoError(t, CheckSystemPackage(ok), ok)
	}
	for _, bad := range []string{"", "-o", "--allow-unauthenticated", "Foo", "a;b", "a b", "pkg=$(id)"} {
		require.ErrorIs(t, CheckSystemPackage(bad), ErrInvalidRequirement, bad)
	}
}

func TestDependencies(t *testing.T) {
	front := minimalFront + "metadata:\n  python_packages: \"Tabulate requests>=2\"\n  system_packages: \"jq python3-yaml\"\n"
	dir := writeSkill(t, t.TempDir(), "demo", doc(front, "Body.\n"), map[string]string{
		"scripts/a.py":             "# /// script\n# dependencies = [\"tabulate\", \"rich>=13\"]\n# requires-python = \">=3.9\"\n# ///\n",
		"scripts/lib/b.py":         "#!/usr/bin/env python3\n# /// script\n# dependencies = [\n#   \"requests >= 2\",\n# ]\n# ///\n",
		"scripts/c.py":             "print('no metadata')\n",
		"scripts/d.sh":             "# /// script\n# dependencies = [\"not-read\"]\n# ///\n",
		"scripts/__pycache__/e.py": "# /// script\n# dependencies = [\"cached\"]\n# ///\n",
		"scripts/.hidden/f.py":     "# /// script\n# dependencies = [\"hidden\"]\n# ///\n",
	})
	// A symlink leaving scripts/ does not contribute; one inside does.
	outside := filepath.Join(t.TempDir(), "out.py")
	require.NoError(t, os.WriteFile(outside, []byte("# /// script\n# dependencies = [\"outside\"]\n# ///\n"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "scripts", "link-out.py")))
	require.NoError(t, os.Symlink("a.py", filepath.Join(dir, "scripts", "link-in.py")))

	sk, err := Load(dir)
	require.NoError(t, err)
	deps, err := sk.Dependencies()
	require.NoError(t, err)
	require.Equal(t, []string{"requests>=2", "rich>=13", "tabulate"}, deps.Python)
	require.Equal(t, []string{"jq", "python3-yaml"}, deps.System)
	require.Equal(t, []string{"SKILL.md", "scripts/a.py:2", "scripts/link-in.py:2"}, deps.Origins["tabulate"])
	require.Equal(t, []string{"SKILL.md", "scripts/lib/b.py:4"}, deps.Origins["requests>=2"])
	require.Equal(t, []PythonConstraint{
		{Spec: ">=3.9", Origin: "scripts/a.py:3"},
		{Spec: ">=3.9", Origin: "scripts/link-in.py:3"},
	}, deps.RequiresPython)
	require.False(t, deps.Empty())
}

func TestDependenciesEmpty(t *testing.T) {
	dir := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, ""), map[string]string{
		"scripts/a.py": "# /// script\n# requires-python = \">=3.9\"\n# ///\nprint(1)\n",
	})
	sk, err := Load(dir)
	require.NoError(t, err)
	deps, err := sk.Dependencies()
	require.NoError(t, err)
	require.True(t, deps.Empty())
	require.Nil(t, deps.Python)
	require.Len(t, deps.RequiresPython, 1)

	noScripts := writeSkill(t, t.TempDir(), "demo", doc(minimalFront, ""), nil)
	sk, err = Load(noScripts)
	require.NoError(t, err)
	deps, err = sk.Dependencies()
	require.NoError(t, err)
	require.True(t, deps.Empty())
}

func TestDependenciesErrors(t *testing.T) {
	tests := []struct {
		name  string
		front string
		files map[string]string
		want  string
		line  int
	}{
		{
			name:  "malformed block",
			front: minimalFront,
			files: map[string]string{"scripts/x.py": "# /// script\n# dependencies = \"a\"\n# ///\n"},
			want:  "scripts/x.py:2:", line: 2,
		},
		{
			name:  "bad requirement in a block names its line",
			front: minimalFront,
			files: map[string]string{"scripts/x.py": "# /// script\n# dependencies = [\n#   \"ok\",\n#   \"bad @ http://x\",\n# ]\n# ///\n"},
			want:  "scripts/x.py:4:", line: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeSkill(t, t.TempDir(), "demo", doc(tt.front, ""), tt.files)
			sk, err := Load(dir)
			require.NoError(t, err)
			_, err = sk.Dependencies()
			require.ErrorIs(t, err, ErrInlineMetadata)
			require.Contains(t, err.Error(), tt.want)
			var me *InlineMetadataError
			require.True(t, errors.As(err, &me))
			require.Equal(t, tt.line, me.Line)
		})
	}

	t.Run("bad frontmatter entry set by hand", func(t *testing.T) {
		sk := &Skill{Dir: t.TempDir(), Path: "/x/SKILL.md", Manifest: Manifest{PythonPackages: []string{"--pre"}}}
		_, err := sk.Dependencies()
		require.ErrorIs(t, err, ErrInvalidRequirement)
		require.Contains(t, err.Error(), "python_packages")
		sk.Manifest = Manifest{SystemPackages: []string{"-y"}}
		_, err = sk.Dependencies()
		require.ErrorIs(t, err, ErrInvalidRequirement)
		require.Contains(t, err.Error(), "system_packages")
	})
}
