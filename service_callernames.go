package sandboxrun

import (
	"github.com/sandboxrun/sandboxrun/internal/layout"
	"github.com/sandboxrun/sandboxrun/internal/told"
	"github.com/sandboxrun/sandboxrun/policy"
	"github.com/sandboxrun/sandboxrun/skill"
)

// callerNames are the names for a request that loaded sk (nil: none) and
// gives the run the host folder workspace ("": none). A place comes before
// the places that hold it: the first that holds a path names it.
func (s *Service) callerNames(sk *skill.Skill, workspace string) *told.Names {
	c := told.New(s.log)
	if sk != nil {
		c.Add(sk.Dir, policy.SandboxDir(sk.Manifest.Name))
	}
	c.Add(workspace, layout.WorkspaceDir)
	if s.sessions != nil {
		c.Add(s.sessions.Root(), "the sessions folder")
	}
	if st, err := s.cat.Uploads(); err == nil {
		c.Add(st.Root(), "the uploaded skills folder")
	}
	for _, root := range s.cfg.SkillRoots {
		c.Add(root, "the skills folder")
	}
	if s.pol != nil && s.pol.Source != policy.BuiltinSource {
		c.Add(s.pol.Source, "operator policy")
	}
	return c
}
