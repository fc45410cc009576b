package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeScript(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
	return p
}

func TestInterpreter(t *testing.T) {
	tests := []struct {
		name, runtime, file, content string
		want                         []string
	}{
		// Runtime override wins over extension and shebang.
		{"runtime python", "python", "x.sh", "#!/bin/bash\n", []string{"python3"}},
		{"runtime python3", "python3", "x", "", []string{"python3"}},
		{"runtime node", "node", "x.py", "", []string{"node"}},
		{"runtime bash", "bash", "x.js", "", []string{"bash"}},
		{"runtime sh", "sh", "x", "", []string{"sh"}},
		{"runtime case and spaces", " Python3 ", "x", "", []string{"python3"}},
		// Extension.
		{"py", "", "x.py", "#!/bin/sh\n", []string{"python3"}},
		{"js", "", "x.js", "", []string{"node"}},
		{"mjs", "", "x.mjs", "", []string{"node"}},
		{"cjs", "", "x.cjs", "", []string{"node"}},
		{"sh", "", "x.sh", "", []string{"bash"}},
		{"bash", "", "x.bash", "", []string{"bash"}},
		{"upper case extension", "", "X.PY", "", []string{"python3"}},
		// Shebang.
		{"env python3", "", "tool", "#!/usr/bin/env python3\nprint(1)\n", []string{"python3"}},
		{"env python", "", "tool", "#!/usr/bin/env python\n", []string{"python3"}},
		{"bin bash", "", "tool", "#!/bin/bash\necho\n", []string{"bash"}},
		{"bin bash with flag", "", "tool", "#!/bin/bash -eu\n", []string{"bash", "-eu"}},
		{"space after bang", "", "tool", "#! /bin/sh\n", []string{"sh"}},
		{"crlf", "", "tool", "#!/usr/bin/env node\r\n", []string{"node"}},
		{"env -S with args", "", "tool", "#!/usr/bin/env -S node --experimental-vm-modules\n", []string{"node", "--experimental-vm-modules"}},
		{"env -S glued", "", "tool", "#!/usr/bin/env -Snode --x\n", []string{"node", "--x"}},
		{"env args without -S", "", "tool", "#!/usr/bin/env python3 -u\n", []string{"python3", "-u"}},
		{"local path", "", "tool", "#!/usr/local/bin/node\n", []string{"node"}},
		{"unknown extension falls back to shebang", "", "x.rb", "#!/usr/bin/env ruby\n", []string{"ruby"}},
		{"shebang without newline", "", "tool", "#!/bin/sh", []string{"sh"}},
		// Like the kernel, only the first 256 bytes count.
		{"shebang cut at 256 bytes", "", "tool", "#!/bin/sh" + strings.Repeat(" ", maxShebang) + "-x\n", []string{"sh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Interpreter(tt.runtime, writeScript(t, tt.file, tt.content))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestInterpreterRefused(t *testing.T) {
	tests := []struct {
		name, runtime, file, content string
		want                         error
		msg                          string
	}{
		{"unknown runtime", "ruby", "x.py", "", ErrUnknownRuntime, "bash, node, python, python3, sh"},
		{"no extension no shebang", "", "tool", "print(1)\n", ErrNoInterpreter, "runtime:"},
		{"empty file", "", "tool", "", ErrNoInterpreter, "shebang"},
		{"shebang on second line", "", "tool", "\n#!/bin/sh\n", ErrNoInterpreter, "extension"},
		{"empty shebang", "", "tool", "#!\n", ErrNoInterpreter, "names no interpreter"},
		{"env alone", "", "tool", "#!/usr/bin/env\n", ErrNoInterpreter, "without a program"},
		{"env option", "", "tool", "#!/usr/bin/env -i python3\n", ErrNoInterpreter, "-i"},
		{"env assignment", "", "tool", "#!/usr/bin/env A=1 python3\n", ErrNoInterpreter, "A=1"},
		{"quoted args", "", "tool", "#!/usr/bin/env -S node \"--a b\"\n", ErrNoInterpreter, "quotes"},
		{"odd interpreter name", "", "tool", "#!/bin/-x\n", ErrNoInterpreter, "not a program name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Interpreter(tt.runtime, writeScript(t, tt.file, tt.content))
			require.ErrorIs(t, err, tt.want)
			require.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestInterpreterUnreadable(t *testing.T) {
	_, err := Interpreter("", filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Contains(t, err.Error(), "shebang")
}

func TestRuntimes(t *testing.T) {
	require.Equal(t, []string{"bash", "node", "python", "python3", "sh"}, Runtimes())
}
