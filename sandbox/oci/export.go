package oci

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ImportFromEngine unpacks ref from the local Docker engine, once per image
// id: it asks the docker CLI for the image's id and, unless that image is
// unpacked already, exports it (docker save) into a temporary file under
// the state folder and imports that. Runs never need the engine; only this
// step does, and it links no engine client.
func (r *Runner) ImportFromEngine(ctx context.Context, ref string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", ref).Output()
	if err != nil {
		return "", fmt.Errorf("look up %s in the Docker engine (build it with make images): %w", ref, exitDetail(err))
	}
	want := strings.TrimSpace(string(out))
	if got, err := r.CheckImage(ctx, ref); err == nil && got == want {
		return got, nil
	}
	tmp, err := os.MkdirTemp(r.state, ".export-")
	if err != nil {
		return "", fmt.Errorf("export %s: %w", ref, err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	tarball := filepath.Join(tmp, "image.tar")
	if err := exec.CommandContext(ctx, "docker", "save", "-o", tarball, ref).Run(); err != nil {
		return "", fmt.Errorf("export %s from the Docker engine: %w", ref, exitDetail(err))
	}
	return r.Import(ctx, ref, tarball)
}

// exitDetail adds a failed command's stderr to its error.
func exitDetail(err error) error {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 { //nolint:errorlint // exec returns it unwrapped
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(firstLine(ee.Stderr)))
	}
	return err
}
