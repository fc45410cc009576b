package skill

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/sandboxrun/sandboxrun/policy"
)

// parseSecretNames reads the secrets a skill needs: a YAML list, or a
// string of names separated by whitespace and/or commas (the metadata
// spelling). Each name is the variable the skill's scripts read, so it
// must be a variable name a caller could set.
func parseSecretNames(n *yaml.Node) ([]string, error) {
	items, err := listItems(n, "a variable name such as GITHUB_TOKEN", "names, e.g. [GITHUB_TOKEN]")
	if err != nil {
		return nil, err
	}
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
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
