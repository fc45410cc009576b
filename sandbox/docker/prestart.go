package docker

import (
	"fmt"
)

// sendPrelude writes the prelude ahead of the job. sandbox-init reads it
// at once, so the write does not wait on the container.
func (s *attachment) sendPrelude(b []byte) error {
	if _, err := s.hj.Conn.Write(b); err != nil {
		return fmt.Errorf("send the prelude to a warm sandbox: %w", err)
	}
	return nil
}
