package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sandboxrun/sandboxrun/policy/bashcheck"
)

// WithTools is o with tools (an allowed-tools string) granted to the skill
// named skill besides what o grants it: a grant the operator gives for one
// invocation (the CLI's --grant-tools, whose user is the operator). o is
// left as it was. The copy's Digest differs from o's, so that an audit
// record tells the two decisions apart.
func (o *Operator) WithTools(skill, tools string) (*Operator, error) {
	extra, err := bashcheck.ParseAllowedTools(tools)
	if err != nil {
		return nil, err
	}
	c := *o
	c.Skills = maps.Clone(o.Skills)
	if c.Skills == nil {
		c.Skills = map[string]*Grants{}
	}
	g := *o.grants(skill)
	g.tools = append(slices.Clone(g.tools), extra...)
	g.AllowedTools.Value = strings.TrimSpace(g.AllowedTools.Value + " " + extra.String())
	g.AllowedTools.Set = true
	c.Skills[skill] = &g
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\ngrant-tools %s: %s", o.Digest, skill, extra))
	c.Digest = hex.EncodeToString(sum[:])
	return &c, nil
}
