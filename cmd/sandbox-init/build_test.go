package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// sandbox-init is copied into runner images of any libc, so it must be a
// static binary; this builds it as the Makefile does and runs one job with it.
func TestStaticBinaryRunsAJob(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "sandbox-init")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build (put go in PATH): %s", out)

	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, prog := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, prog.Type, "dynamically linked: it needs a loader")
		require.NotEqual(t, elf.PT_DYNAMIC, prog.Type, "has a dynamic section")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs)

	p := startInit(t, jobReader(t, newJob("sh", "-c", "echo static; exit 2")), func(c *exec.Cmd) {
		c.Path, c.Args = bin, []string{bin}
	})
	o := p.finish(t)
	require.Equal(t, 2, o.report.ExitCode)
	require.Equal(t, "static\n", string(o.stdout))
}
