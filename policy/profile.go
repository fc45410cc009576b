package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Runner profiles are variants of the runner image with more Debian
// packages preinstalled (images builds them), so skills that expect common
// libraries run without declaring packages. The operator chooses one for all
// skills (profile:) or per skill (skills.<name>.profile:).
const (
	// ProfileDocuments adds PDF, Word, Excel, YAML, image and table
	// libraries and the poppler tools.
	ProfileDocuments = "documents"
	// ProfileOffice is documents plus LibreOffice (headless), for skills
	// that convert or recalculate office files.
	ProfileOffice = "office"
)

var runnerProfiles = []string{ProfileDocuments, ProfileOffice}

// ErrUnknownProfile is returned for a profile name sandboxrun does not know.
var ErrUnknownProfile = errors.New("unknown runner profile")

// RunnerProfiles lists the profile names.
func RunnerProfiles() []string { return slices.Clone(runnerProfiles) }

// CheckProfile accepts "" (the plain runner) and the profile names.
func CheckProfile(name string) error {
	if name == "" || slices.Contains(runnerProfiles, name) {
		return nil
	}
	return fmt.Errorf("%w %q: use one of %s", ErrUnknownProfile, name, strings.Join(runnerProfiles, ", "))
}

// Profile is the runner profile skill runs in, "" for the plain runner: the
// skill's own setting in the policy, else the policy's.
func (o *Operator) Profile(skill string) string {
	if g := o.grants(skill); g.Profile.Set {
		return g.Profile.Value
	}
	return o.RunnerProfile.Value
}

// checkProfileSetting refuses a profile: key naming no profile.
func checkProfileSetting(key string, s Setting[string]) error {
	if !s.Set {
		return nil
	}
	if err := CheckProfile(s.Value); err != nil {
		return fmt.Errorf("line %d: %s: %w", s.Line, key, err)
	}
	return nil
}
