package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// mcpOCI measures `sandboxrun mcp` on the oci backend with a warm pool:
// every MCP call is a session run, so this is what a warm session run
// costs there, beside the Docker rows of the same run.
func mcpOCI(bin, root string, n int, row func(string, int, result)) error {
	pol := filepath.Join(root, "oci-policy.yaml")
	body := fmt.Sprintf("backend: oci\noci:\n  state: %s\n  warm: 2\n  warm_idle: %s\n", ociState, benchIdle)
	if err := os.WriteFile(pol, []byte(body), 0o600); err != nil {
		return err
	}
	if out, err := exec.Command(bin, "--policy", pol, "images", "unpack").CombinedOutput(); err != nil { //nolint:gosec // the bench's own binary
		return fmt.Errorf("unpack the runner image for the oci backend: %w: %s", err, out)
	}
	m, err := startMCPWith(bin, root, []string{"--policy", pol})
	if err != nil {
		return err
	}
	defer m.stop()
	if err := m.run(context.Background()); err != nil { // the first, cold
		return fmt.Errorf("mcp stdio, oci: %w", err)
	}
	r, err := measure(n, 1, m.run)
	if err != nil {
		return fmt.Errorf("mcp stdio, oci: %w", err)
	}
	row("mcp stdio, oci warm", 1, r)
	if r, err = measurePaced(n, 1, thinkTime, m.run); err != nil {
		return fmt.Errorf("mcp stdio, oci, paced: %w", err)
	}
	row("mcp stdio, oci warm, 1s apart", 1, r)
	return nil
}
