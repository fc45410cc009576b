package policy

import (
	"errors"
	"fmt"

	"github.com/sandboxrun/sandboxrun/internal/layout"
)

// WorkDir says where a script, command or piece of code starts: in the
// workspace (the default), or in the skill's own folder, which is what a
// SKILL.md that says `python scripts/fill.py form.pdf` expects.
type WorkDir string

// The working directories a request may choose.
const (
	WorkDirWorkspace WorkDir = "workspace"
	WorkDirSkill     WorkDir = "skill"
)

// ErrBadWorkDir is returned by ParseWorkDir for anything but the two names.
var ErrBadWorkDir = errors.New("invalid working directory")

// ParseWorkDir reads a --cwd value; empty means the workspace.
func ParseWorkDir(s string) (WorkDir, error) {
	switch WorkDir(s) {
	case "", WorkDirWorkspace:
		return WorkDirWorkspace, nil
	case WorkDirSkill:
		return WorkDirSkill, nil
	}
	return "", fmt.Errorf("%w %q: use %q (/workspace, the default) or %q (/skills/<name>, read-only)", ErrBadWorkDir, s, WorkDirWorkspace, WorkDirSkill)
}

// SandboxPath is the directory inside the sandbox for the skill named
// skillName. The skill folder is mounted read-only, so a script started
// there still writes its output under /workspace.
func (w WorkDir) SandboxPath(skillName string) string {
	if w == WorkDirSkill {
		return SandboxDir(skillName)
	}
	return layout.WorkspaceDir
}
