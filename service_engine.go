package sandboxrun

import "context"

// Engine is the backend runs of this Service go through, connected (and
// pinged) on first use exactly as for a run. `sandboxrun doctor` asks it
// about its host; callers must not Close it: Service.Close does.
func (s *Service) Engine(ctx context.Context) (Engine, error) {
	return s.runner(ctx)
}
