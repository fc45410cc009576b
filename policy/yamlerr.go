package policy

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// inSection names the section a decoding error happened in. An error that
// already names its line (a nested setting's own check) keeps that line,
// the more precise one; any other gets the section's.
func inSection(n *yaml.Node, section string, err error) error {
	if strings.HasPrefix(err.Error(), "line ") {
		return fmt.Errorf("%s: %w", section, err)
	}
	return fmt.Errorf("line %d: %s: %w", n.Line, section, err)
}
