package sandboxrun

import (
	"context"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// RunRemoteScript is RunScript for a caller who may not name host paths (a
// model, through MCP or HTTP): script must name the file as the skill sees
// it (scripts/x.py, {baseDir}/scripts/x.py or /skills/<name>/scripts/x.py).
// An absolute host path, even one inside the skill folder, or a ".." is
// refused before anything else happens, and the refusal is audited and
// observed like every other.
func (s *Service) RunRemoteScript(ctx context.Context, skillRef, script string, req Request) (*sandbox.Result, error) {
	// A skill that does not load is RunScript's to report (and audit).
	if sk, err := s.Skill(skillRef); err == nil {
		if _, err := SkillPath(sk.Manifest.Name, script); err != nil {
			s.auditRefusal(sk.Manifest.Name, req, asked{script: script}, err)
			s.observe(sk.Manifest.Name, nil, err, 0)
			return nil, err
		}
	}
	return s.RunScript(ctx, skillRef, script, req)
}
