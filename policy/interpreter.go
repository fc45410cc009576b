package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
)

// Sentinels for interpreter selection.
var (
	ErrNoInterpreter  = errors.New("no interpreter for the script")
	ErrUnknownRuntime = errors.New("unknown runtime")
)

// runtimeAliases maps every accepted runtime value to the program the runner
// image provides.
var runtimeAliases = map[string]string{
	"python": "python3", "python3": "python3", "node": "node", "bash": "bash", "sh": "sh",
}

// extensionRuntimes picks the interpreter from the file name.
var extensionRuntimes = map[string]string{
	".py": "python3", ".js": "node", ".mjs": "node", ".cjs": "node", ".sh": "bash", ".bash": "bash",
}

// maxShebang is how much of a file's first line is read, the same bound the
// Linux kernel applies (BINPRM_BUF_SIZE).
const maxShebang = 256

// Runtimes lists the values accepted for a skill's runtime field.
func Runtimes() []string {
	names := make([]string, 0, len(runtimeAliases))
	for k := range runtimeAliases {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Interpreter returns the argv prefix that runs the script at hostPath, to be
// followed by the script's sandbox path. The interpreter comes from runtime
// (the skill's override) when set, else the file extension, else the
// shebang line.
func Interpreter(runtime, hostPath string) ([]string, error) {
	if rt := strings.ToLower(strings.TrimSpace(runtime)); rt != "" {
		prog, ok := runtimeAliases[rt]
		if !ok {
			return nil, fmt.Errorf("runtime %q: %w; use one of %s", runtime, ErrUnknownRuntime, strings.Join(Runtimes(), ", "))
		}
		return []string{prog}, nil
	}
	if prog, ok := extensionRuntimes[strings.ToLower(filepath.Ext(hostPath))]; ok {
		return []string{prog}, nil
	}
	line, ok, err := readShebang(hostPath)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, where.Errorf("%s: %w: add a .py/.js/.sh extension, a shebang line (#!/usr/bin/env python3), or runtime: in SKILL.md", where.Path(hostPath), ErrNoInterpreter)
	}
	argv, err := parseShebang(line)
	if err != nil {
		return nil, where.Errorf("%s: %w: %w; fix the shebang or set runtime: in SKILL.md", where.Path(hostPath), ErrNoInterpreter, err)
	}
	return argv, nil
}

// readShebang returns the text after "#!" on the first line, and false when
// the file does not start with "#!".
func readShebang(hostPath string) (string, bool, error) {
	f, err := os.Open(hostPath) // #nosec G304 -- hostPath passed ResolveScript's path guard
	if err != nil {
		return "", false, where.Errorf("reading the shebang of %s: %w", where.Path(hostPath), err)
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, maxShebang)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", false, where.Errorf("reading the shebang of %s: %w", where.Path(hostPath), err)
	}
	first, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	rest, ok := bytes.CutPrefix(first, []byte("#!"))
	if !ok {
		return "", false, nil
	}
	return strings.TrimSpace(strings.TrimSuffix(string(rest), "\r")), true, nil
}

// parseShebang turns a shebang line into an argv prefix: the interpreter's
// base name (looked up on the sandbox PATH, since host paths such as
// /usr/local/bin mean nothing there) and its arguments. "/usr/bin/env [-S]"
// is unwrapped. Arguments are split on whitespace, as env -S does, rather
// than passed as the kernel's single argument, because sandboxrun builds the
// argv itself; quoting is refused rather than half-interpreted.
func parseShebang(line string) ([]string, error) {
	if strings.ContainsAny(line, "'\"\\$`") {
		return nil, errors.New("the shebang uses quotes, backslashes or $, which sandboxrun does not interpret")
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil, errors.New("the shebang line names no interpreter")
	}
	prog, args := path.Base(fields[0]), fields[1:]
	if prog == "env" {
		var err error
		if prog, args, err = unwrapEnv(args); err != nil {
			return nil, err
		}
	}
	if !validProgramName(prog) {
		return nil, fmt.Errorf("the shebang interpreter %q is not a program name", prog)
	}
	return append([]string{bashcheck.NormProgram(prog)}, args...), nil
}

// unwrapEnv returns the program and arguments env would run.
func unwrapEnv(args []string) (string, []string, error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-S" || a == "--split-string":
			continue
		case strings.HasPrefix(a, "-S"):
			return path.Base(a[2:]), args[i+1:], nil
		case strings.HasPrefix(a, "-"):
			return "", nil, fmt.Errorf("env option %q in the shebang is not supported", a)
		case strings.Contains(a, "="):
			return "", nil, fmt.Errorf("env assignment %q in the shebang is not supported; pass variables through the execution environment", a)
		}
		return path.Base(a), args[i+1:], nil
	}
	return "", nil, errors.New("the shebang runs env without a program")
}

func validProgramName(s string) bool {
	if s == "" || s[0] == '-' || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.' || c == '_' || c == '+' || c == '-':
		default:
			return false
		}
	}
	return true
}
