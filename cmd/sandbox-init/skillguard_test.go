package main

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// A sent skill starts under a guard; without one (no Landlock) it is
// refused, naming the setting that accepts modes alone, unless the job
// says the operator accepted them, which is logged.
func TestGuardOrModes(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	require.NoError(t, guardOrModes(guard{fd: -1}, &frame.SkillFiles{}, log), "no writable /skills: nothing to guard")
	require.NoError(t, guardOrModes(guard{fd: 5, needed: true}, &frame.SkillFiles{}, log), "guarded")
	require.Empty(t, buf.String())

	none := guard{fd: -1, needed: true, why: "landlock unavailable: function not implemented"}
	err := guardOrModes(none, &frame.SkillFiles{Dir: "/skills/x"}, log)
	require.ErrorIs(t, err, errNoSkillGuard)
	require.Contains(t, err.Error(), "function not implemented")
	require.Contains(t, err.Error(), "kubernetes.skill_send_guard: modes")
	require.Empty(t, buf.String())

	require.NoError(t, guardOrModes(none, &frame.SkillFiles{Dir: "/skills/x", ModesOnly: true}, log))
	require.Contains(t, buf.String(), "read-only by mode only")
}
