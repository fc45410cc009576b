package skill

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClaudeFieldsBothSpellings(t *testing.T) {
	for name, front := range map[string]string{
		"top level": minimalFront + "disable-model-invocation: true\nwhen_to_use: When a demo is asked for.\n",
		"metadata":  minimalFront + "metadata:\n  disable-model-invocation: \"true\"\n  when_to_use: When a demo is asked for.\n",
	} {
		t.Run(name, func(t *testing.T) {
			m, probs := decodeFront(t, front)
			for _, p := range probs {
				require.NotEqual(t, sevFatal, p.sev, p.String())
			}
			require.True(t, m.DisableModelInvocation)
			require.False(t, m.ModelVisible())
			require.Equal(t, "When a demo is asked for.", m.WhenToUse)
		})
	}
	m, _ := decodeFront(t, minimalFront)
	require.True(t, m.ModelVisible(), "visible unless the field says otherwise")
}

func TestClaudeFieldsRefused(t *testing.T) {
	for name, tc := range map[string]struct{ front, want string }{
		"not a bool":    {minimalFront + "disable-model-invocation: maybe\n", "true or false"},
		"disagree":      {minimalFront + "disable-model-invocation: true\nmetadata:\n  disable-model-invocation: \"false\"\n", "disagree"},
		"empty when":    {minimalFront + "when_to_use: \"\"\n", "is empty"},
		"long when":     {minimalFront + "when_to_use: " + strings.Repeat("x", 1100) + "\n", "keep it to 1024"},
		"when not text": {minimalFront + "when_to_use: [a, b]\n", "string"},
	} {
		t.Run(name, func(t *testing.T) {
			_, probs := decodeFront(t, tc.front)
			var msgs []string
			for _, p := range probs {
				if p.sev == sevFatal {
					msgs = append(msgs, p.String())
				}
			}
			require.NotEmpty(t, msgs)
			require.Contains(t, strings.Join(msgs, "\n"), tc.want)
		})
	}
}

// validate knows the fields: the metadata spelling is clean even in strict
// mode, and a bad value is an error.
func TestValidateKnowsClaudeFields(t *testing.T) {
	root := t.TempDir()
	good := writeSkill(t, root, "demo", doc(minimalFront+"metadata:\n  disable-model-invocation: \"true\"\n  when_to_use: For demos.\n", "Body.\n"), nil)
	r := Validate(good, true)
	require.True(t, r.Valid, r.Errors)
	require.Empty(t, r.Warnings)
	bad := writeSkill(t, t.TempDir(), "demo", doc(minimalFront+"disable-model-invocation: 3\n", "Body.\n"), nil)
	r = Validate(bad, false)
	require.False(t, r.Valid)
	require.Contains(t, strings.Join(r.Errors, "\n"), "disable-model-invocation")
}

func TestForModel(t *testing.T) {
	shown := &Skill{Manifest: Manifest{Name: "a"}}
	hidden := &Skill{Manifest: Manifest{Name: "b", DisableModelInvocation: true}}
	require.Equal(t, []*Skill{shown}, ForModel([]*Skill{hidden, shown}))
}
