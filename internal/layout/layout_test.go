package layout

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every package may import layout only while layout imports nothing of the
// project.
func TestLayoutIsALeaf(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range parsed.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			require.False(t, strings.HasPrefix(p, "github.com/sandboxrun/"), "%s imports %s", f, p)
		}
	}
}

func TestSkillDirAndRunnerRef(t *testing.T) {
	require.Equal(t, "/skills/hello", SkillDir("hello"))
	require.Equal(t, "sandboxrun/runner:0.1.0", RunnerRef("0.1.0"))
	require.True(t, strings.HasPrefix(LabelManaged, LabelPrefix))
}
