package images

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeELF writes a minimal x86-64 ELF executable, with a PT_INTERP program
// header when dynamic, so Validate can be tested without a toolchain.
func writeELF(t *testing.T, dir, name string, dynamic bool) string {
	t.Helper()
	const ehsize, phsize = 64, 56
	phnum := 0
	if dynamic {
		phnum = 1
	}
	buf := make([]byte, ehsize+phsize*phnum)
	copy(buf, []byte{0x7f, 'E', 'L', 'F', 2, 1, 1})
	le := binary.LittleEndian
	le.PutUint16(buf[16:], 2)  // ET_EXEC
	le.PutUint16(buf[18:], 62) // EM_X86_64
	le.PutUint32(buf[20:], 1)  // EV_CURRENT
	if dynamic {
		le.PutUint64(buf[32:], ehsize) // e_phoff
	}
	le.PutUint16(buf[52:], ehsize)
	le.PutUint16(buf[54:], phsize)
	le.PutUint16(buf[56:], uint16(phnum))
	le.PutUint16(buf[58:], 64)
	if dynamic {
		le.PutUint32(buf[ehsize:], 3) // PT_INTERP
	}
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, buf, 0o755))
	return p
}

func TestRunnerOptionsValidate(t *testing.T) {
	dir := t.TempDir()
	static := writeELF(t, dir, "static", false)
	dynamic := writeELF(t, dir, "dynamic", true)
	script := filepath.Join(dir, "script")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755))
	notExec := filepath.Join(dir, "notexec")
	require.NoError(t, os.WriteFile(notExec, []byte("x"), 0o644))

	good := RunnerOptions{Tag: "sandboxrun/runner:0.1.0", Version: "0.1.0", Dockerfile: []byte("FROM x"), InitBinary: static}
	tests := []struct {
		name   string
		mutate func(*RunnerOptions)
		err    string
	}{
		{"valid", func(*RunnerOptions) {}, ""},
		{"valid with base", func(o *RunnerOptions) { o.Base = "debian:bookworm-slim" }, ""},
		{"empty tag", func(o *RunnerOptions) { o.Tag = "" }, "runner tag: image reference is empty"},
		{"tag looks like a flag", func(o *RunnerOptions) { o.Tag = "--rm" }, "starts with '-'"},
		{"tag with space", func(o *RunnerOptions) { o.Tag = "a b" }, "contains whitespace"},
		{"base looks like a flag", func(o *RunnerOptions) { o.Base = "-q" }, "base image"},
		{"no version", func(o *RunnerOptions) { o.Version = " " }, "set RunnerOptions.Version"},
		{"no dockerfile", func(o *RunnerOptions) { o.Dockerfile = nil }, "Dockerfile.runner"},
		{"no init", func(o *RunnerOptions) { o.InitBinary = "" }, "CGO_ENABLED=0 go build"},
		{"missing init", func(o *RunnerOptions) { o.InitBinary = filepath.Join(dir, "nope") }, "no such file"},
		{"init not executable", func(o *RunnerOptions) { o.InitBinary = notExec }, "not an executable file"},
		{"init is a script", func(o *RunnerOptions) { o.InitBinary = script }, "not a Linux executable"},
		{"init dynamically linked", func(o *RunnerOptions) { o.InitBinary = dynamic }, "dynamically linked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.mutate(&o)
			err := o.Validate()
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestPullFailureReason(t *testing.T) {
	err := &CommandError{Command: []string{"docker", "pull"}, StderrTail: "Using default tag\nError response from daemon: dial tcp: lookup registry-1.docker.io: no such host\n"}
	require.Equal(t, "Error response from daemon: dial tcp: lookup registry-1.docker.io: no such host", pullFailureReason(err, false))
	require.Equal(t, "docker pull did not finish within 30s", pullFailureReason(err, true))
}
