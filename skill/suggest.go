package skill

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// maxListed bounds how many skill names a not-found message lists.
const maxListed = 10

// listHint is what a remote caller, who passes no flags and names no
// folders of the host, is told to do about a name that is no skill.
const listHint = "list the skills you may run with GET /v1/skills (MCP: the list_skills tool)"

// notFoundByName explains a skill name that matches no skill under the
// roots: a missing root, a likely typo, or the names that do exist. The
// fix it suggests depends on the reader: the operator passes --skills or a
// path; a remote caller lists the skills (where.ForOperator).
func notFoundByName(roots []string, ref string, skills []*Skill) error {
	in := where.JoinPaths(roots, ":")
	for _, root := range roots {
		if fi, err := os.Stat(root); errors.Is(err, os.ErrNotExist) || (err == nil && !fi.IsDir()) {
			return where.Errorf("%w: no skill %q in %s, which does not exist or is not a folder; %s", ErrSkillNotFound, ref, where.Path(root),
				where.ForOperator{
					Operator: fmt.Sprintf("pass the skills root with --skills DIR (several: A:B) or SANDBOXRUN_SKILLS, or give the path to the skill folder (./%s)", ref),
					Others:   "the server's operator has to fix its skills folder",
				})
		}
	}
	names := make([]string, 0, len(skills))
	for _, s := range skills {
		names = append(names, s.Manifest.Name)
	}
	if best := closest(ref, names); best != "" {
		return where.Errorf("%w: no skill %q in %s; did you mean %q?", ErrSkillNotFound, ref, in, best)
	}
	switch {
	case len(names) == 0:
		return where.Errorf("%w: no skill %q in %s, which holds no skills; %s", ErrSkillNotFound, ref, in,
			where.ForOperator{Operator: "pass --skills DIR or a path to the skill folder", Others: listHint})
	case len(names) > maxListed:
		names = append(names[:maxListed], "…")
	}
	return where.Errorf("%w: no skill %q in %s (it holds: %s); %s", ErrSkillNotFound, ref, in, strings.Join(names, ", "),
		where.ForOperator{Operator: "pass one of those, --skills DIR, or a path to the skill folder", Others: "pass one of those, or " + listHint})
}

// closest returns the name within a small edit distance of ref (a typo),
// or "" when none is close or two are equally close.
func closest(ref string, names []string) string {
	limit := 2
	if len([]rune(ref)) <= 4 {
		limit = 1
	}
	best, bestDist, tie := "", limit+1, false
	for _, n := range names {
		d := editDistance(strings.ToLower(ref), n)
		switch {
		case d < bestDist:
			best, bestDist, tie = n, d, false
		case d == bestDist:
			tie = true
		}
	}
	if tie || bestDist > limit {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
