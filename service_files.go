package sandboxrun

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
)

// MaxSkillFileBytes bounds a skill file handed to a remote caller whole (an
// MCP resource read). A larger file is refused, not cut: half a file read as
// if whole misleads more than no file.
const MaxSkillFileBytes = 4 << 20

// ErrSkillFileNotFound is wrapped when a skill has no file by the name asked
// for. It matches ErrRefused too: nothing was read.
var ErrSkillFileNotFound = errors.New("skill file not found")

// SkillFile is one file of a skill as a remote caller reads it.
type SkillFile struct {
	// Skill is the skill's name.
	Skill string
	// Path is the file's slash path relative to the skill folder, e.g.
	// references/api.md.
	Path string
	Data []byte
}

// skillPath turns a model's name for a file of the skill skillName into a
// clean slash path relative to the skill folder. The names a model sees are
// accepted: "references/x.md", "{baseDir}/references/x.md" and the sandbox
// path "/skills/<skillName>/references/x.md". Anything that could name a
// host file is refused (matching ErrRefused): another absolute path, a ".."
// element, a backslash, a control byte, an empty name or the folder itself.
// The host file system is not consulted.
func skillPath(skillName, ref string) (string, error) {
	base := policy.SandboxDir(skillName)
	switch {
	case ref == "":
		return "", refused(errors.New("the file name is empty: name a file relative to the skill folder, e.g. references/notes.md"))
	case strings.ContainsFunc(ref, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", refused(fmt.Errorf("file name %q holds a control character", ref))
	case strings.ContainsRune(ref, '\\'):
		return "", refused(fmt.Errorf("file name %q holds a backslash: separate folders with /", ref))
	}
	rel, _ := policy.TrimSkillDir(skillName, ref)
	if strings.HasPrefix(rel, "/") {
		// Not quoted: the caller's guess at a host path is not said back, so
		// an answer never holds a host folder (told.Names.Say).
		return "", refused(fmt.Errorf("the file name is an absolute path outside the skill: name it relative to the skill folder (scripts/x.py) or under %s/", base))
	}
	for _, elem := range strings.Split(rel, "/") {
		if elem == ".." {
			return "", refused(fmt.Errorf("file name %q has a \"..\" element: name a file inside the skill folder", ref))
		}
	}
	clean := path.Clean(rel)
	if clean == "." {
		return "", refused(fmt.Errorf("file name %q names the skill folder itself: name a file in it, e.g. SKILL.md", ref))
	}
	return clean, nil
}

// readSkillFile reads one file of sk (Door.ReadSkillFile): ref names it
// as SkillPath accepts. Hidden files and folders (a leading dot, as in .git)
// are refused, since an activation never lists them; symlinks are followed
// only while they stay inside the skill folder; the file must be a regular
// file of at most MaxSkillFileBytes. "SKILL.md" reads the skill's manifest
// whichever spelling it has on disk. Errors are in sandbox terms for every
// caller. sk loaded unless err says why not.
func (s *Service) readSkillFile(sk *skill.Skill, err error, ref string) (*SkillFile, error) {
	if err != nil {
		// The skill did not load: its folder is not known to hide.
		return nil, s.callerNames(nil, "").Err(err)
	}
	rel, err := skillPath(sk.Manifest.Name, ref)
	if err != nil {
		return nil, err
	}
	for _, elem := range strings.Split(rel, "/") {
		if strings.HasPrefix(elem, ".") {
			return nil, refused(fmt.Errorf("file %q is hidden (%s): only the files an activation lists can be read", rel, elem))
		}
	}
	if rel == "SKILL.md" {
		rel = filepath.Base(sk.Path)
	}
	data, err := readInside(sk.Dir, rel)
	if err != nil {
		return nil, err
	}
	if rel == filepath.Base(sk.Path) {
		rel = "SKILL.md"
	}
	return &SkillFile{Skill: sk.Manifest.Name, Path: rel, Data: data}, nil
}

// readInside reads dir/rel through an os.Root, which refuses any path or
// symlink that resolves outside dir, however it is spelled. Errors name rel,
// never the host folder.
func readInside(dir, rel string) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening skill folder: %w", err)
	}
	defer func() { _ = root.Close() }() // read-only: nothing to lose
	// O_NONBLOCK: opening a named pipe must not wait for a writer. It has no
	// effect on reading a regular file, the only kind read below.
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return nil, refused(fmt.Errorf("%w: the skill has no file %s (activate_skill lists its files)", ErrSkillFileNotFound, rel))
	case err != nil:
		return nil, refused(fmt.Errorf("file %s cannot be read: it resolves outside the skill folder or is not readable", rel))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, refused(fmt.Errorf("%s is not a regular file: name a file, not a folder or a special file", rel))
	}
	if fi.Size() > MaxSkillFileBytes {
		return nil, refused(fmt.Errorf("%s is %d bytes, over the %s limit for reading a skill file whole; run a script that reads it instead", rel, fi.Size(), size.Format(MaxSkillFileBytes)))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSkillFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if len(data) > MaxSkillFileBytes {
		return nil, refused(fmt.Errorf("%s grew past the %s limit while it was read", rel, size.Format(MaxSkillFileBytes)))
	}
	return data, nil
}
