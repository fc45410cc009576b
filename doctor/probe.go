package doctor

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// probeFS is the probe skill: a SKILL.md and scripts/probe.sh.
//
//go:embed probe
var probeFS embed.FS

// probeSkill is the probe's skill name, and probeScript its script.
const (
	probeSkill  = "sandboxrun-doctor"
	probeScript = "scripts/probe.sh"
)

// writeGrant is the line of the probe's SKILL.md that asks for a writable
// workspace.
const writeGrant = "allowed-tools: Write\n"

// writeProbe writes the probe skill into a new folder under dir and
// returns the skills root that holds it. Without write, the probe does not
// ask for a writable workspace (a backend that offers none refuses runs
// that do).
func writeProbe(dir string, write bool) (string, error) {
	root := filepath.Join(dir, "skills")
	err := fs.WalkDir(probeFS, "probe", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(root, probeSkill, strings.TrimPrefix(path, "probe"))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755) //nolint:gosec // read by the sandbox's unprivileged user
		}
		b, err := probeFS.ReadFile(path)
		if err != nil {
			return err
		}
		if !write && d.Name() == "SKILL.md" {
			b = []byte(strings.Replace(string(b), writeGrant, "", 1))
		}
		// The sandbox's user is not the file's owner: world-readable.
		return os.WriteFile(dst, b, 0o644) //nolint:gosec // read by the sandbox's unprivileged user
	})
	return root, err
}

// probeOutput is what the probe printed: key=value lines.
type probeOutput map[string]string

// parseProbe reads the probe's lines; a value may itself hold '='. Lines
// without one are ignored: a message from the shell is not a fact.
func parseProbe(stdout string) probeOutput {
	out := probeOutput{}
	for line := range strings.Lines(stdout) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), "=")
		if ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// complete reports whether the probe ran to its last line.
func (p probeOutput) complete() bool { return p["done"] == "1" }

// list is a comma-separated value as a slice, empty when the value is.
func (p probeOutput) list(key string) []string {
	if p[key] == "" {
		return nil
	}
	return strings.Split(p[key], ",")
}
