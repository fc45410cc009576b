package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandboxrun/sandboxrun/internal/frame"
)

// fetchSkill asks the host for the skill's files (frame.SkillFiles) and
// writes them into a new folder sk.Dir, which it then makes read-only like
// everything in it. The parent is the Pod's skills volume, sized by the
// host's cap: a stream larger than that fails here with ENOSPC.
func fetchSkill(ch *channel, sk *frame.SkillFiles) error {
	if ch == nil {
		return fmt.Errorf("%w: skill: %w", errBadJob, errNoChannel)
	}
	if !filepath.IsAbs(sk.Dir) || filepath.Clean(sk.Dir) != sk.Dir || sk.Dir == "/" {
		return fmt.Errorf("%w: skill dir %q is not an absolute, clean folder", errBadJob, sk.Dir)
	}
	if err := os.Mkdir(sk.Dir, 0o700); err != nil {
		return fmt.Errorf("make the skill's folder: %w", err)
	}
	s, err := ch.open(frame.StreamSkillIn)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	if err := extract(s, sk.Dir); err != nil {
		return fmt.Errorf("fetch the skill's files: %w", err)
	}
	return os.Chmod(sk.Dir, 0o555) //nolint:gosec // read-only, and readable by the script, which is the point
}
