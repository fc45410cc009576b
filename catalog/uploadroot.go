package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
)

// defaultUploadsDir is the folder beside the sessions root uploads are
// kept in when skill_uploads.store is not set. Not "skills": beside
// sessions/, that is where an operator keeps their own skills.
const defaultUploadsDir = "uploads"

// uploadsRoot is where uploaded skills are kept: skill_uploads.store, else
// an "uploads" folder beside the sessions root; "" when neither is set.
func uploadsRoot(pol *policy.Operator, sessions string) string {
	if r := pol.SkillUploads.Store.Value; r != "" {
		return r
	}
	if r := sessions; r != "" {
		return filepath.Join(filepath.Dir(filepath.Clean(r)), defaultUploadsDir)
	}
	return ""
}

// checkUploadsRoot refuses an upload store that is, holds or lies inside
// a skills root or the sessions root: its folders would be found as the
// operator's skills (every tenant could list and run another's upload,
// and the names would be taken), or mixed with sessions. Paths are
// compared with links resolved, as far as they exist: a folder not made
// yet is its nearest existing parent, resolved, and the rest of its path.
func checkUploadsRoot(store string, explicit bool, skillRoots []string, sessions string) error {
	st, err := realPath(store)
	if err != nil {
		return where.Errorf("skill_uploads.store %s: %w", where.Path(store), err)
	}
	type other struct{ path, what string }
	var others []other
	for _, r := range skillRoots {
		others = append(others, other{r, "the skills root"})
	}
	if sessions != "" {
		others = append(others, other{sessions, "the sessions root"})
	}
	for _, o := range others {
		real, err := realPath(o.path)
		if err != nil {
			return where.Errorf("%s %s: %w", o.what, where.Path(o.path), err)
		}
		var rel string
		switch {
		case st == real:
			rel = "is"
		case within(real, st):
			rel = "lies inside"
		case within(st, real):
			rel = "holds"
		default:
			continue
		}
		which := "skill_uploads.store"
		if !explicit {
			which = "the default upload store (" + defaultUploadsDir + "/ beside the sessions root)"
		}
		return where.Errorf("%s %s %s %s %s: uploads kept there would mix with the operator's skills or sessions; set skill_uploads.store in the policy to a folder outside every skills root and the sessions root",
			which, where.Path(store), rel, o.what, where.Path(o.path))
	}
	return nil
}

// realPath is p absolute with its links resolved, as far as it exists.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; {
		real, err := filepath.EvalSymlinks(dir)
		switch {
		case err == nil:
			return filepath.Join(real, rest), nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", err
		}
		if _, lerr := os.Lstat(dir); lerr == nil {
			return "", err // a link to nothing: where it leads is unknown
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// within reports whether p lies below dir (both clean and absolute).
func within(dir, p string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, string(os.PathSeparator))+string(os.PathSeparator))
}
