package images

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// skillRecipeVersion changes when the way a skill image is made changes
// (the build script, what it cleans up), so that images made the old way
// stop matching and get rebuilt.
const skillRecipeVersion = "2"

// skillTagLen is how many hex digits of the deps hash make the tag: 64
// bits, plenty to tell apart the images of one skill.
const skillTagLen = 16

// skillPlan is everything a build needs, computed before any build starts.
type skillPlan struct {
	opts        SkillOptions // normalized
	runnerID    string
	ref         string
	depsHash    string
	contentHash string
	findLinks   []findLinksSource
}

// findLinksSource is one --find-links entry: a URL passed to pip as it is,
// or a local folder whose top-level files are copied into the build.
type findLinksSource struct {
	value string
	local bool
	// files are the regular files directly in the folder (symlinks
	// followed), sorted: what pip would see there, since it does not
	// recurse into subfolders.
	files []string
}

// planSkill computes a build. The image's identity, its tag and its content
// hash, is what it holds: the package lists and the runner image. Package
// sources (index URL, trusted hosts, --find-links) are how to fetch them and
// are not part of it: an image built from a wheelhouse is up to date for a
// later build or run that names no source, offline included. A changed
// wheel of the same version is rebuilt with --no-cache.
func planSkill(o SkillOptions, runnerID string) (skillPlan, error) {
	p := skillPlan{opts: o, runnerID: runnerID, depsHash: depsHash(o, runnerID)}
	p.ref = skillRef(o.Skill, p.depsHash)
	p.contentHash = contentHash("skill", []byte(p.depsHash))
	for _, l := range o.Pip.FindLinks {
		src := findLinksSource{value: l, local: !isURL(l)}
		if src.local {
			files, err := listWheelhouse(l)
			if err != nil {
				return skillPlan{}, err
			}
			src.files = files
		}
		p.findLinks = append(p.findLinks, src)
	}
	return p, nil
}

// depsHash identifies a skill image by what it holds: the skill, the exact
// runner image it is built on, and the canonical package lists. o must be
// normalized.
func depsHash(o SkillOptions, runnerID string) string {
	return contentHash("skill-deps",
		[]byte(skillRecipeVersion),
		[]byte(o.Skill),
		[]byte(runnerID),
		[]byte(strings.Join(o.SystemPackages, "\n")),
		[]byte(strings.Join(o.PythonPackages, "\n")),
		[]byte(strings.Join(o.RequiresPython, "\n")),
		[]byte(strconv.FormatBool(o.SourceBuilds)),
	)
}

func skillRef(skillName, depsHash string) string {
	return SkillRepoPrefix + repoName(skillName) + ":" + strings.TrimPrefix(depsHash, "sha256:")[:skillTagLen]
}

var (
	specSkillName = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)
	notRepoChar   = regexp.MustCompile(`[^a-z0-9]+`)
)

// repoName turns a skill name into the part of a repository name after
// "sandboxrun/skill-". Spec-style names (lowercase ASCII letters, digits,
// hyphens) are used as they are; others (the skill package also accepts
// Unicode letters) are reduced to ASCII and suffixed with a short hash of
// the real name, so two names never share a repository.
func repoName(name string) string {
	if specSkillName.MatchString(name) && len(name) <= 64 {
		return name
	}
	ascii := strings.Trim(notRepoChar.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(ascii) > 40 {
		ascii = strings.TrimRight(ascii[:40], "-")
	}
	sum := sha256.Sum256([]byte(name))
	if ascii == "" {
		return "x-" + hex.EncodeToString(sum[:4])
	}
	return ascii + "-" + hex.EncodeToString(sum[:4])
}

// listWheelhouse lists the regular files directly in dir (symlinks
// followed, as pip does), sorted: what pip sees there, since it does not
// recurse into subfolders.
func listWheelhouse(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, where.Errorf("--find-links %s: %w", where.Path(dir), err)
	}
	var files []string
	for _, e := range entries {
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		files = append(files, e.Name())
	}
	sort.Strings(files)
	return files, nil
}
