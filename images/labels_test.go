package images

import (
	"os"
	"strconv"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/layout"
)

func TestRunnerHashStableAndSensitive(t *testing.T) {
	df, init, base := []byte("FROM x\n"), []byte("\x7fELF..."), "sha256:aaaa"
	h := runnerHash(df, init, base)
	require.Equal(t, h, runnerHash([]byte("FROM x\n"), []byte("\x7fELF..."), "sha256:aaaa"), "same inputs, same hash")
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, h)
	// Pinned so that an accidental change of the hash recipe (which would
	// rebuild every user's images) fails here and gets a hashRecipeVersion
	// bump instead.
	require.Equal(t, "sha256:f560d1546924daadc403f9753d90662af6eb5852a90329453f9b111264918fcd", h)

	changed := map[string]string{
		"dockerfile":        runnerHash([]byte("FROM y\n"), init, base),
		"init binary":       runnerHash(df, []byte("\x7fELF..!"), base),
		"base id":           runnerHash(df, init, "sha256:aaab"),
		"bytes moved parts": runnerHash([]byte("FROM x\n\x7f"), []byte("ELF..."), base),
	}
	for name, other := range changed {
		t.Run(name, func(t *testing.T) {
			require.NotEqual(t, h, other)
		})
	}
}

func TestBaseHashSensitivity(t *testing.T) {
	p := bootstrapPlan{Mirror: "http://deb.debian.org/debian", Suite: "bookworm", Components: []string{"main"}, Include: basePackages}
	h := baseHash(p)
	require.Equal(t, h, baseHash(p))

	tests := []struct {
		name   string
		mutate func(*bootstrapPlan)
		same   bool
	}{
		{"mirror", func(p *bootstrapPlan) { p.Mirror = "http://ftp.de.debian.org/debian" }, false},
		{"suite", func(p *bootstrapPlan) { p.Suite = "trixie" }, false},
		{"include list", func(p *bootstrapPlan) { p.Include = []string{"python3"} }, false},
		{"components", func(p *bootstrapPlan) { p.Components = []string{"main", "contrib"} }, false},
		{"keyring does not change content", func(p *bootstrapPlan) { p.Keyring = "/k.gpg" }, true},
		{"source file does not change content", func(p *bootstrapPlan) { p.Source = "/etc/apt/sources.list" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := p
			q.Include = append([]string(nil), p.Include...)
			tt.mutate(&q)
			if tt.same {
				require.Equal(t, h, baseHash(q))
			} else {
				require.NotEqual(t, h, baseHash(q))
			}
		})
	}
	require.NotEqual(t, h, runnerHash(nil, nil, ""), "kinds are separated")
}

func TestRunnerLabels(t *testing.T) {
	created := time.Date(2026, 5, 7, 21, 9, 36, 0, time.FixedZone("CEST", 2*3600))
	o := RunnerOptions{Version: "0.1.0", Source: "https://github.com/sandboxrun/sandboxrun", Revision: "abc123"}
	got := runnerLabels(o, baseImage{Ref: "sandboxrun/base:bookworm", ID: "sha256:base"}, "sha256:hash", created)
	require.Equal(t, map[string]string{
		ocispec.AnnotationTitle:         "sandboxrun runner",
		ocispec.AnnotationDescription:   "Sandbox for sandboxrun skill executions: python3, nodejs, bash, jq, git; sandbox-init as PID 1; runs as uid 65532",
		ocispec.AnnotationVersion:       "0.1.0",
		ocispec.AnnotationCreated:       "2026-05-07T19:09:36Z",
		ocispec.AnnotationBaseImageName: "sandboxrun/base:bookworm",
		ocispec.AnnotationSource:        "https://github.com/sandboxrun/sandboxrun",
		ocispec.AnnotationRevision:      "abc123",
		"io.sandboxrun.base.id":         "sha256:base",
		"io.sandboxrun.managed":         "true",
		"io.sandboxrun.kind":            "runner",
		"io.sandboxrun.content-hash":    "sha256:hash",
	}, got)
}

func TestBaseLabels(t *testing.T) {
	p := bootstrapPlan{Mirror: "http://deb.debian.org/debian", Suite: "bookworm"}
	got := baseLabels(p, "sha256:h", time.Unix(0, 0))
	require.Equal(t, "true", got[LabelManaged])
	require.Equal(t, KindBase, got[LabelKind])
	require.Equal(t, "sha256:h", got[LabelContentHash])
	require.Equal(t, "1970-01-01T00:00:00Z", got[ocispec.AnnotationCreated])
	require.Equal(t, "bookworm", got[ocispec.AnnotationVersion])
	require.Contains(t, got[ocispec.AnnotationDescription], "http://deb.debian.org/debian")
	require.Contains(t, got, ocispec.AnnotationTitle)
	require.Len(t, got, 7)
}

func TestLabelInstruction(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   string
		err    string
	}{
		{
			name:   "sorted, one instruction",
			labels: map[string]string{"io.sandboxrun.kind": "base", "a.b": "x y"},
			want:   `LABEL a.b="x y" io.sandboxrun.kind="base"`,
		},
		{
			name:   "quotes, backslashes and dollars are escaped",
			labels: map[string]string{"k": `say "hi" \ $HOME`},
			want:   `LABEL k="say \"hi\" \\ \$HOME"`,
		},
		{name: "newline in value", labels: map[string]string{"k": "two\nlines"}, err: "cannot be written"},
		{name: "space in key", labels: map[string]string{"bad key": "v"}, err: "cannot be written"},
		{name: "empty key", labels: map[string]string{"": "v"}, err: "cannot be written"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := labelInstruction(tt.labels)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestWithLabels(t *testing.T) {
	got, err := withLabels([]byte("FROM x\nUSER 1"), map[string]string{"b": "2", "a": "1"})
	require.NoError(t, err)
	require.Equal(t, "FROM x\nUSER 1\n\n# Added by sandboxrun at build time.\nLABEL a=\"1\" b=\"2\"\n", string(got))

	same, err := withLabels([]byte("FROM x\n"), nil)
	require.NoError(t, err)
	require.Equal(t, "FROM x\n", string(same))

	_, err = withLabels([]byte("FROM x\n"), map[string]string{"k": "a\nb"})
	require.Error(t, err)
}

// The runner's Dockerfile is not Go, so it cannot import the uid; this
// keeps the user it creates and runs as equal to layout.UID.
func TestRunnerDockerfileUser(t *testing.T) {
	dockerfile, err := os.ReadFile("../Dockerfile.runner")
	require.NoError(t, err)
	uid, gid := strconv.Itoa(layout.UID), strconv.Itoa(layout.GID)
	require.Contains(t, string(dockerfile), "\nUSER "+uid+":"+gid+"\n")
	require.Contains(t, string(dockerfile), "useradd --uid "+uid+" --gid "+gid+" ")
	require.Contains(t, string(dockerfile), "groupadd --gid "+gid+" ")
	require.Contains(t, string(profileDockerfile([]string{"jq"})), "\nUSER "+uid+":"+gid+"\n")
}
