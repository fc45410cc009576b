package skill

import (
	"fmt"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Claude's skill fields, read in both spellings like the execution fields:
// `disable-model-invocation` (true keeps the skill out of every listing a
// model reads, while a host may still run it by name) and `when_to_use`
// (shown to the model next to the description).

// maxWhenToUseLen bounds when_to_use as the spec bounds a description: it
// is read into a model's context with every listing.
const maxWhenToUseLen = maxDescriptionLen

func parseWhenToUse(n *yaml.Node) (string, error) {
	s, err := scalarOf(n, "a string saying when to use the skill")
	switch {
	case err != nil:
		return "", err
	case s == "":
		return "", fmt.Errorf("is empty; say when to use the skill, or remove it")
	case utf8.RuneCountInString(s) > maxWhenToUseLen:
		return "", fmt.Errorf("is %d characters; keep it to %d, move detail into the body", utf8.RuneCountInString(s), maxWhenToUseLen)
	}
	return s, nil
}

// ModelVisible reports whether a model may be shown the skill: false when
// its frontmatter sets disable-model-invocation.
func (m Manifest) ModelVisible() bool { return !m.DisableModelInvocation }

// ForModel are the skills a model may be shown, in order: those without
// disable-model-invocation.
func ForModel(skills []*Skill) []*Skill {
	out := make([]*Skill, 0, len(skills))
	for _, sk := range skills {
		if sk.Manifest.ModelVisible() {
			out = append(out, sk)
		}
	}
	return out
}
