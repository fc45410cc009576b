//go:build kube

package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// `sandboxrun run --policy kube.yaml SKILL SCRIPT` runs on the cluster and
// prints the same Result, and exits the same, as the same command on the
// Docker engine.
func TestCLIOnKubernetesMatchesDocker(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sandboxrun")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/sandboxrun").CombinedOutput()
	require.NoError(t, err, "go build ./cmd/sandboxrun: %s", out)
	dir := t.TempDir()
	kubePolicy, dockerPolicy := filepath.Join(dir, "kube.yaml"), filepath.Join(dir, "docker.yaml")
	require.NoError(t, os.WriteFile(kubePolicy, []byte("backend: kubernetes\nkubernetes:\n  kubeconfig: "+
		os.Getenv("SANDBOXRUN_KUBECONFIG")+"\n  namespace: "+runner.Namespace()+"\nnetwork: none\n"), 0o600))
	require.NoError(t, os.WriteFile(dockerPolicy, []byte("network: none\n"), 0o600))
	skills, err := filepath.Abs("../../skills")
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		args []string
		exit int
	}{
		{"script with JSON arguments", []string{"run", "hello", "scripts/echo.py", "--args", `{"name": "kube"}`}, 0},
		{"script with argv", []string{"run", "--workspace", filepath.Join(skills, "data-analysis/assets"),
			"data-analysis", "scripts/top.py", "--", "sample.csv", "--by", "price", "-n", "2"}, 0},
		{"failing command", []string{"exec", "hello", "--", "python3 -c 'import sys; print(1); sys.exit(4)'"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := map[string]sandbox.Result{}
			for backend, pol := range map[string]string{"kubernetes": kubePolicy, "docker": dockerPolicy} {
				args := append([]string{tc.args[0], "--json", "--policy", pol, "--skills", skills}, tc.args[1:]...)
				cmd := exec.Command(bin, args...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				code := 0
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					code = exit.ExitCode()
				} else {
					require.NoError(t, err)
				}
				require.Equal(t, tc.exit, code, "%s: %s", backend, stderr.String())
				var res sandbox.Result
				require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "%s printed %q", backend, stdout.String())
				if backend == "kubernetes" {
					requirePodGone(t, res.ID)
				}
				results[backend] = comparable(&res)
			}
			require.Equal(t, results["docker"], results["kubernetes"])
			require.NotEmpty(t, results["kubernetes"].Stdout)
		})
	}
}
