package skill

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/layout"
	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
)

// BaseDirPlaceholder is replaced in the body by the skill's folder inside the
// sandbox, as are Claude Code's ${CLAUDE_PLUGIN_ROOT} and ${CLAUDE_SKILL_DIR}
// (see bashcheck.SkillRefs).
const BaseDirPlaceholder = layout.BaseDirPlaceholder

// Refs resolves references to the skill's own files in its instructions,
// commands and Bash(...) entries (see bashcheck.SkillRefs): its scripts are
// looked up with the path guard a run applies.
func (s *Skill) Refs() bashcheck.SkillRefs {
	return bashcheck.SkillRefs{
		Name:   s.Manifest.Name,
		Folder: filepath.Base(s.Dir),
		Script: func(rel string) (string, bool) {
			sc, err := policy.ResolveScript(s.Dir, s.Manifest.Name, rel)
			return sc.SandboxPath, err == nil
		},
	}
}

// maxListedFiles bounds an activation's file listing; a skill with more files
// than this is not something to hand to an agent.
const maxListedFiles = 10000

// Activation is what an agent receives when it activates a skill: the
// instructions with {baseDir} resolved, the files it may ask for (listed, not
// read), and the tools the skill pre-approves, their references to the
// skill's files resolved as the policy check resolves them.
type Activation struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// BaseDir is the skill folder inside the sandbox, /skills/<name>.
	BaseDir string `json:"base_dir"`
	Body    string `json:"body"`
	// Scripts, References and Assets are paths relative to the skill folder
	// ("scripts/run.py"), slash-separated, sorted, recursive; hidden files
	// and folders are left out.
	Scripts      []string        `json:"scripts"`
	References   []string        `json:"references"`
	Assets       []string        `json:"assets"`
	AllowedTools bashcheck.Tools `json:"allowed_tools"`
}

// Activate returns the skill's activation. A skill from LoadMeta has its body
// read now.
func (s *Skill) Activate() (*Activation, error) {
	src := s
	if !s.bodyLoaded {
		full, err := Load(s.Dir)
		if err != nil {
			return nil, fmt.Errorf("activating skill: %w", err)
		}
		src = full
	}
	refs := src.Refs()
	a := &Activation{
		Name:         src.Manifest.Name,
		Description:  src.Manifest.Description,
		BaseDir:      policy.SandboxDir(src.Manifest.Name),
		Body:         refs.ExpandPlaceholders(src.Body),
		AllowedTools: src.Manifest.AllowedTools.ForSkill(refs),
	}
	budget := maxListedFiles
	for _, f := range []struct {
		sub string
		dst *[]string
	}{{"scripts", &a.Scripts}, {"references", &a.References}, {"assets", &a.Assets}} {
		files, err := listFiles(src.Dir, f.sub, &budget)
		if err != nil {
			return nil, fmt.Errorf("activating skill %s: %w", src.Manifest.Name, err)
		}
		*f.dst = files
	}
	return a, nil
}

// MarshalJSON writes lists as [] rather than null and allowed-tools entries
// as {"name", "spec"} objects.
func (a Activation) MarshalJSON() ([]byte, error) {
	type tool struct {
		Name string `json:"name"`
		Spec string `json:"spec,omitempty"`
	}
	type plain Activation
	out := struct {
		plain
		AllowedTools []tool `json:"allowed_tools"`
	}{plain: plain(a), AllowedTools: []tool{}}
	for _, t := range a.AllowedTools {
		out.AllowedTools = append(out.AllowedTools, tool{Name: t.Name, Spec: t.Spec})
	}
	for _, l := range []*[]string{&out.Scripts, &out.References, &out.Assets} {
		if *l == nil {
			*l = []string{}
		}
	}
	return json.Marshal(out)
}

// listFiles lists the regular files and symlinks under dir/sub. A missing
// sub, or one that is not a real directory, lists nothing: symlinks are not
// followed, so the listing stays inside the skill.
func listFiles(dir, sub string, budget *int) ([]string, error) {
	root := filepath.Join(dir, sub)
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, where.Errorf("listing %s: %w", where.Path(sub), err)
		}
		return []string{}, nil
	}
	files := []string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if t := d.Type(); d.IsDir() || (!t.IsRegular() && t&fs.ModeSymlink == 0) {
			return nil // folders are walked into; devices, sockets and pipes are not files to offer
		}
		if *budget--; *budget < 0 {
			return fmt.Errorf("%w: more than %d files under scripts/, references/ and assets/", ErrTooLarge, maxListedFiles)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, where.Errorf("listing %s: %w", where.Path(sub), err)
	}
	slices.Sort(files)
	return files, nil
}
