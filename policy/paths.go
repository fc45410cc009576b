package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/sandboxrun/sandboxrun/internal/fsmode"
	"github.com/sandboxrun/sandboxrun/internal/layout"
	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Sentinels for script-path refusals; each is wrapped with the path, the rule
// and the fix.
var (
	ErrOutsideScripts = errors.New("outside the skill's scripts/ folder")
	ErrNotRegular     = errors.New("not a regular file")
	ErrSetID          = errors.New("has the setuid or setgid bit")
	ErrNotFound       = errors.New("script not found")
)

const (
	// sandboxSkillsRoot is where skills are mounted inside the sandbox.
	sandboxSkillsRoot = layout.SkillsRoot
	scriptsName       = layout.ScriptsFolder
)

// Script is a script that passed the path guard.
type Script struct {
	// HostPath is the resolved (symlink-free) absolute path on the host.
	HostPath string
	// Rel is the slash path of the resolved file relative to the skill
	// folder, always under scripts/, e.g. scripts/x.py.
	Rel string
	// SandboxPath is where the resolved file is inside the sandbox, e.g.
	// /skills/<name>/scripts/x.py. It names the resolved file, not the
	// symlink the caller may have given, so the container runs exactly the
	// file that was checked.
	SandboxPath string
}

// SandboxDir is the skill folder's path inside the sandbox, which {baseDir}
// resolves to.
func SandboxDir(skillName string) string {
	return sandboxSkillsRoot + "/" + skillName
}

// TrimSkillDir reads ref as a skill's text names a file of its own: a
// leading "{baseDir}/" or "/skills/<skillName>/" is dropped and rel is the
// rest as written; the folder itself, either way, is ".". in says whether
// ref was so prefixed; otherwise rel is ref. This is the one grammar of a
// reference into the skill: scripts to run and files to read both use it.
func TrimSkillDir(skillName, ref string) (rel string, in bool) {
	base := SandboxDir(skillName)
	for _, dir := range []string{layout.BaseDirPlaceholder, base} {
		if ref == dir {
			return ".", true
		}
		if rest, ok := strings.CutPrefix(ref, dir+"/"); ok {
			return rest, true
		}
	}
	return ref, false
}

// ResolveScript resolves ref to a script of the skill in skillDir and checks
// it: after following symlinks it must be inside the skill's scripts/ folder,
// exist, be a regular file and carry no setuid/setgid bit.
//
// ref may be "scripts/x.py", "x.py" (meaning scripts/x.py),
// "{baseDir}/scripts/x.py", "/skills/<name>/scripts/x.py", or an absolute host
// path inside the skill folder.
//
// The check and the later run are separate steps, so a host process that can
// write the skill folder could swap the file in between; the sandbox mounts
// the folder read-only, which stops the script itself from doing so.
func ResolveScript(skillDir, skillName, ref string) (Script, error) {
	if err := checkSkillName(skillName); err != nil {
		return Script{}, err
	}
	if ref == "" || strings.IndexByte(ref, 0) >= 0 {
		return Script{}, fmt.Errorf("script %q: %w: give a path such as scripts/x.py", ref, ErrNotFound)
	}
	absSkill, err := filepath.Abs(skillDir)
	if err != nil {
		return Script{}, where.Errorf("resolving skill folder %q: %w", where.Path(skillDir), err)
	}
	realSkill, err := filepath.EvalSymlinks(absSkill)
	if err != nil {
		return Script{}, where.Errorf("resolving skill folder %q: %w", where.Path(skillDir), err)
	}
	rel, err := skillRelative([]string{absSkill, realSkill}, skillName, ref)
	if err != nil {
		return Script{}, err
	}
	scriptsDir, err := checkScriptsDir(realSkill)
	if err != nil {
		return Script{}, err
	}
	target := filepath.Join(realSkill, filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(target)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return Script{}, where.Errorf("script %q: %w: %s does not exist (or is a dangling symlink); check the name under %s/", ref, ErrNotFound, where.Path(target), scriptsName)
		}
		return Script{}, fmt.Errorf("resolving script %q: %w", ref, err)
	}
	inside, ok := relativeTo([]string{scriptsDir}, real)
	if !ok || inside == "." {
		return Script{}, where.Errorf("script %q: %w: it resolves to %s; only files under %s can run, so move the file there instead of linking to it", ref, ErrOutsideScripts, where.Path(real), where.Path(scriptsDir))
	}
	if err := checkScriptFile(ref, real); err != nil {
		return Script{}, err
	}
	relPath := scriptsName + "/" + inside
	return Script{
		HostPath:    real,
		Rel:         relPath,
		SandboxPath: SandboxDir(skillName) + "/" + relPath,
	}, nil
}

// maxSandboxName bounds a skill's folder name in the sandbox.
const maxSandboxName = 128

// ValidSandboxName reports whether name can be the skill's folder in the
// sandbox, /skills/<name>: 1-128 Unicode letters, digits, '.', '_' or '-',
// starting with a letter or digit. That is wider than the spec's name rules
// (lowercase, hyphens): a skill that breaks only those still runs, with a
// warning, under its own name.
func ValidSandboxName(name string) bool {
	if name == "" || utf8.RuneCountInString(name) > maxSandboxName {
		return false
	}
	for i, r := range name {
		switch {
		case unicode.IsLetter(r), unicode.IsNumber(r):
		case i > 0 && (r == '.' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return true
}

// checkSkillName keeps SandboxDir a single folder under /skills. skill/
// validates names fully; this only stops path tricks.
func checkSkillName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("skill name %q cannot name a folder under %s; use the name from SKILL.md", name, sandboxSkillsRoot)
	}
	return nil
}

// skillRelative turns ref into a clean slash path relative to the skill folder
// and refuses, before touching the file system, anything that is lexically
// outside scripts/ (so "../x" reports the rule, not "not found").
// skillDirs are the skill folder as given and as resolved; an absolute ref may
// be under either.
func skillRelative(skillDirs []string, skillName, ref string) (string, error) {
	rel, inSkill := TrimSkillDir(skillName, ref)
	switch {
	case inSkill: // rel is the rest of ref
	case filepath.IsAbs(ref):
		r, ok := relativeTo(skillDirs, ref)
		if !ok {
			return "", where.Errorf("script %q: %w: absolute paths must be inside the skill folder %s; use a path like scripts/x.py", ref, ErrOutsideScripts, where.Path(skillDirs[0]))
		}
		rel = r
	case !strings.Contains(ref, "/"):
		rel = scriptsName + "/" + ref
	}
	clean := path.Clean(rel)
	if !strings.HasPrefix(clean, scriptsName+"/") {
		return "", fmt.Errorf("script %q: %w: it names %s relative to the skill folder; only files under %s/ can run, e.g. scripts/x.py", ref, ErrOutsideScripts, clean, scriptsName)
	}
	return clean, nil
}

// relativeTo returns p as a slash path relative to the first of dirs that
// lexically contains it.
func relativeTo(dirs []string, p string) (string, bool) {
	for _, d := range dirs {
		r, err := filepath.Rel(d, filepath.Clean(p))
		if err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(r), true
		}
	}
	return "", false
}

// checkScriptsDir returns the skill's scripts folder. It must be a real
// folder: a scripts symlink would be followed on the host but resolve
// against the container's file system inside the sandbox.
func checkScriptsDir(realSkill string) (string, error) {
	dir := filepath.Join(realSkill, scriptsName)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", where.Errorf("%w: the skill has no %s/ folder at %s; create it and put the script there", ErrNotFound, scriptsName, where.Path(dir))
	case err != nil:
		return "", where.Errorf("checking %s: %w", where.Path(dir), err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", where.Errorf("%s: %w: %s/ is a symlink, which would resolve differently inside the sandbox; make it a real folder", where.Path(dir), ErrOutsideScripts, scriptsName)
	case !fi.IsDir():
		return "", where.Errorf("%s: %w: %s/ is not a folder; make it a folder holding the scripts", where.Path(dir), ErrNotFound, scriptsName)
	}
	return dir, nil
}

// checkScriptFile applies the file rules to the resolved path.
func checkScriptFile(ref, real string) error {
	fi, err := os.Lstat(real)
	if err != nil {
		return fmt.Errorf("checking script %q: %w", ref, err)
	}
	mode := fi.Mode()
	if !mode.IsRegular() {
		return where.Errorf("script %q: %w: %s is %s; point at a file under scripts/", ref, ErrNotRegular, where.Path(real), fsmode.Describe(mode))
	}
	if mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		return where.Errorf("script %q: %w: %s would run with another user's or group's rights; clear it with chmod u-s,g-s %s", ref, ErrSetID, where.Path(real), where.Path(real))
	}
	return nil
}
