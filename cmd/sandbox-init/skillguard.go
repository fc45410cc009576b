package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// errNoSkillGuard: a sent skill's files would be writable by the script
// here (no Landlock), and the operator did not accept that.
var errNoSkillGuard = errors.New("the skill's files cannot be kept read-only here")

// guardOrModes decides whether a run whose skill was sent may start under
// g: with a guard, yes; without one (the kernel has no Landlock), only when
// the job accepts files read-only by mode alone, which is logged.
func guardOrModes(g guard, sk *frame.SkillFiles, log *slog.Logger) error {
	if !g.needed || g.fd >= 0 {
		return nil
	}
	if !sk.ModesOnly {
		return fmt.Errorf("%w: the script runs as the user that unpacked them and this node's kernel offers no Landlock to stop it (%s); "+
			"run on nodes whose kernel has Landlock (Linux 5.13 or later, landlock in its lsm= list), put the skill under a volume claim, "+
			"or accept files read-only by mode alone with the policy's kubernetes.skill_send_guard: modes", errNoSkillGuard, g.why)
	}
	log.Warn("the skill's files are read-only by mode only: the script could chmod and write its copy (kubernetes.skill_send_guard: modes)", "why", g.why)
	return nil
}
