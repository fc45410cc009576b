package skill

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/sandboxrun/sandboxrun/policy"
)

// parseSecretNames reads the secrets a skill needs: a YAML list, or a
// string of names separated by whitespace and/or commas (the metadata
// spelling). Each name is the variable the skill's scripts read, so it
// must be a variable name a caller could set.
func parseSecretNames(n *yaml.Node) ([]string, error) {
	var items []string
	switch n.Kind {
	case yaml.ScalarNode:
		items = strings.FieldsFunc(n.Value, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	case yaml.SequenceNode:
		for _, it := range n.Content {
			s, ok := scalarText(resolveAlias(it))
			if !ok {
				return nil, fmt.Errorf("has a list item that is not a string; each item must be a variable name such as GITHUB_TOKEN")
			}
			items = append(items, strings.TrimSpace(s))
		}
	default:
		return nil, fmt.Errorf("is a YAML %s; write a list of names, e.g. [GITHUB_TOKEN]", kindName(n))
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("is empty; name the secrets the skill needs, or remove it")
	}
	out := []string{}
	for _, s := range items {
		if err := policy.CheckEnv(map[string]string{s: ""}); err != nil {
			return nil, fmt.Errorf("has %q, which cannot be a secret's variable: %w", s, err)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}
