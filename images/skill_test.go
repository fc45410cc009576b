package images

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/internal/where"
	"github.com/sandboxrun/sandboxrun/skill"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/")

const testRunnerID = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

func baseSkillOptions() SkillOptions {
	return SkillOptions{
		Skill:          "csv-report",
		Runner:         "sandboxrun/runner:0.1.0",
		PythonPackages: []string{"tinypkg", "Rich[Jupyter] >= 13"},
		SystemPackages: []string{"python3-tabulate", "bc"},
	}
}

func TestSkillOptionsNormalized(t *testing.T) {
	wheels := t.TempDir()
	o := baseSkillOptions()
	o.PythonPackages = append(o.PythonPackages, "TinyPkg", "tomli; python_version < '3.11'")
	o.SystemPackages = append(o.SystemPackages, "bc")
	o.RequiresPython = []string{">=3.9", ">=3.9"}
	o.Pip = PipConfig{FindLinks: []string{wheels, "https://example.com/wheels/"}, TrustedHosts: []string{"b.example", "a.example:8443"}}
	n, err := o.normalized()
	require.NoError(t, err)
	require.Equal(t, []string{"rich[jupyter]>=13", "tinypkg", "tomli; python_version < '3.11'"}, n.PythonPackages)
	require.Equal(t, []string{"bc", "python3-tabulate"}, n.SystemPackages)
	require.Equal(t, []string{">=3.9"}, n.RequiresPython)
	require.Equal(t, []string{wheels, "https://example.com/wheels/"}, n.Pip.FindLinks)
	require.Equal(t, []string{"a.example:8443", "b.example"}, n.Pip.TrustedHosts)
}

func TestSkillOptionsRefused(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	tests := []struct {
		name   string
		change func(*SkillOptions)
		want   string
	}{
		{"empty skill", func(o *SkillOptions) { o.Skill = "" }, "skill name"},
		{"skill with a slash", func(o *SkillOptions) { o.Skill = "a/b" }, "skill name"},
		{"runner option", func(o *SkillOptions) { o.Runner = "--privileged" }, "runner image"},
		{"pip option as package", func(o *SkillOptions) { o.PythonPackages = []string{"--index-url=http://x"} }, "pip option"},
		{"shell in a package", func(o *SkillOptions) { o.PythonPackages = []string{"a;$(id)"} }, "environment marker"},
		{"apt option as package", func(o *SkillOptions) { o.SystemPackages = []string{"-oAPT::x=1"} }, "Debian package name"},
		{"requires-python with shell", func(o *SkillOptions) { o.RequiresPython = []string{">=3; rm -rf /"} }, "requires-python"},
		{"index not a URL", func(o *SkillOptions) { o.Pip.IndexURL = "pypi.example.com" }, "--index-url"},
		{"index with a space", func(o *SkillOptions) { o.Pip.IndexURL = "https://x/simple --pre" }, "--index-url"},
		{"find-links not a folder", func(o *SkillOptions) { o.Pip.FindLinks = []string{notDir} }, "not a folder"},
		{"trusted host with a path", func(o *SkillOptions) { o.Pip.TrustedHosts = []string{"x/y"} }, "--trusted-host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := baseSkillOptions()
			tt.change(&o)
			err := o.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
	t.Run("a password never appears in the error", func(t *testing.T) {
		o := baseSkillOptions()
		o.Pip.IndexURL = "ftp://user:hunter2@example.com/simple"
		err := o.Validate()
		require.Error(t, err)
		require.NotContains(t, err.Error(), "hunter2")
	})
	t.Run("a find-links folder is a value a remote reader is told by name", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "wheels")
		for _, dir := range []string{missing, notDir} {
			o := baseSkillOptions()
			o.Pip.FindLinks = []string{dir}
			err := o.Validate()
			require.ErrorContains(t, err, dir, "the operator is shown the folder")
			told := where.Render(err, func(string) string { return "a file of the server" })
			require.NotContains(t, told, filepath.Dir(dir))
			require.Contains(t, told, "--find-links a file of the server")
		}
	})
	t.Run("bad requirement matches the skill package's sentinel", func(t *testing.T) {
		o := baseSkillOptions()
		o.PythonPackages = []string{"-e."}
		require.ErrorIs(t, o.Validate(), skill.ErrInvalidRequirement)
	})
}

func TestSkillTagAndHashes(t *testing.T) {
	wheels := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(wheels, "a-1-py3-none-any.whl"), []byte("wheel a"), 0o600))
	plan := func(t *testing.T, change func(*SkillOptions), runnerID string) skillPlan {
		t.Helper()
		o := baseSkillOptions()
		o.Pip.FindLinks = []string{wheels}
		if change != nil {
			change(&o)
		}
		n, err := o.normalized()
		require.NoError(t, err)
		p, err := planSkill(n, runnerID)
		require.NoError(t, err)
		tag, err := SkillTag(o, runnerID)
		require.NoError(t, err)
		require.Equal(t, p.ref, tag, "SkillTag and the build agree")
		return p
	}
	base := plan(t, nil, testRunnerID)
	require.Regexp(t, `^sandboxrun/skill-csv-report:[0-9a-f]{16}$`, base.ref)

	same := []struct {
		name   string
		change func(*SkillOptions)
	}{
		{"packages in another order and spelling", func(o *SkillOptions) {
			o.PythonPackages = []string{"rich [jupyter]>=13", "TinyPkg", "tinypkg"}
			o.SystemPackages = []string{"bc", "python3-tabulate", "bc"}
		}},
		{"progress, version and no-cache are not inputs", func(o *SkillOptions) {
			o.Progress, o.Version, o.NoCache = os.Stderr, "9.9.9", true
		}},
	}
	for _, tt := range same {
		t.Run("same: "+tt.name, func(t *testing.T) {
			p := plan(t, tt.change, testRunnerID)
			require.Equal(t, base.ref, p.ref)
			require.Equal(t, base.contentHash, p.contentHash)
		})
	}

	t.Run("same: the wheelhouse moved but holds the same files", func(t *testing.T) {
		moved := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(moved, "a-1-py3-none-any.whl"), []byte("wheel a"), 0o600))
		p := plan(t, func(o *SkillOptions) { o.Pip.FindLinks = []string{moved} }, testRunnerID)
		require.Equal(t, base.contentHash, p.contentHash)
	})

	newTag := []struct {
		name   string
		change func(*SkillOptions)
		runner string
	}{
		{"another runner image", nil, "sha256:2222222222222222222222222222222222222222222222222222222222222222"},
		{"a python package more", func(o *SkillOptions) { o.PythonPackages = append(o.PythonPackages, "six") }, testRunnerID},
		{"a version constraint", func(o *SkillOptions) { o.PythonPackages = []string{"tinypkg==0.1", "rich[jupyter]>=13"} }, testRunnerID},
		{"a system package less", func(o *SkillOptions) { o.SystemPackages = []string{"bc"} }, testRunnerID},
		{"requires-python", func(o *SkillOptions) { o.RequiresPython = []string{">=3.9"} }, testRunnerID},
		{"another skill", func(o *SkillOptions) { o.Skill = "other" }, testRunnerID},
	}
	for _, tt := range newTag {
		t.Run("new tag: "+tt.name, func(t *testing.T) {
			p := plan(t, tt.change, tt.runner)
			require.NotEqual(t, base.ref, p.ref)
			require.NotEqual(t, base.contentHash, p.contentHash)
		})
	}

	// Package sources are how to fetch the packages, not what the image
	// holds: an image built from a wheelhouse is up to date for a build or
	// run that names another source or none (offline included).
	sources := []struct {
		name   string
		change func(*SkillOptions)
	}{
		{"an index URL", func(o *SkillOptions) { o.Pip.IndexURL = "https://pypi.example.com/simple" }},
		{"a trusted host", func(o *SkillOptions) { o.Pip.TrustedHosts = []string{"pypi.example.com"} }},
		{"no find-links", func(o *SkillOptions) { o.Pip.FindLinks = nil }},
		{"a URL find-links", func(o *SkillOptions) { o.Pip.FindLinks = []string{"https://example.com/wheels/"} }},
	}
	for _, tt := range sources {
		t.Run("same image: "+tt.name, func(t *testing.T) {
			p := plan(t, tt.change, testRunnerID)
			require.Equal(t, base.ref, p.ref, "run finds the image whatever the package source")
			require.Equal(t, base.contentHash, p.contentHash, "build finds it up to date whatever the package source")
		})
	}

	t.Run("same image: a wheel changed (build --no-cache rebuilds)", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(wheels, "a-1-py3-none-any.whl"), []byte("wheel a, rebuilt"), 0o600))
		p := plan(t, nil, testRunnerID)
		require.Equal(t, base.ref, p.ref)
		require.Equal(t, base.contentHash, p.contentHash)
	})
}

func TestSkillTagIgnoresPackageSources(t *testing.T) {
	o := baseSkillOptions()
	want, err := SkillTag(o, testRunnerID)
	require.NoError(t, err)
	o.Pip.FindLinks = []string{"/nonexistent/wheelhouse"}
	got, err := SkillTag(o, testRunnerID)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestRepoName(t *testing.T) {
	require.Equal(t, "csv-report", repoName("csv-report"))
	require.Equal(t, "a1", repoName("a1"))
	u := repoName("données-brutes")
	require.Regexp(t, `^donn-es-brutes-[0-9a-f]{8}$`, u)
	require.NotEqual(t, u, repoName("donnéés-brutes"), "different names never share a repository")
	require.Regexp(t, `^x-[0-9a-f]{8}$`, repoName("数据"))
	require.Regexp(t, `^ab-[0-9a-f]{8}$`, repoName("AB"))
	long := strings.Repeat("é", 100)
	require.LessOrEqual(t, len(repoName(long)), 64)
}

func goldenPlan(t *testing.T, change func(*SkillOptions)) skillPlan {
	t.Helper()
	o := baseSkillOptions()
	if change != nil {
		change(&o)
	}
	n, err := o.normalized()
	require.NoError(t, err)
	p, err := planSkill(n, testRunnerID)
	require.NoError(t, err)
	return p
}

// The golden build scripts pin what a skill image build runs as root.
func TestSkillScriptGolden(t *testing.T) {
	wheels := t.TempDir()
	tests := []struct {
		name   string
		change func(*SkillOptions)
	}{
		{"skill-full", func(o *SkillOptions) {
			o.RequiresPython = []string{">=3.9"}
			o.Pip = PipConfig{
				IndexURL:     "https://user:it's-secret@pypi.example.com/simple",
				FindLinks:    []string{wheels, "https://example.com/links/"},
				TrustedHosts: []string{"pypi.example.com"},
			}
		}},
		{"skill-system-only", func(o *SkillOptions) { o.PythonPackages = nil }},
		{"skill-wheelhouse-only", func(o *SkillOptions) {
			o.SystemPackages = nil
			o.Pip = PipConfig{FindLinks: []string{wheels}}
		}},
		{"skill-source-builds", func(o *SkillOptions) {
			o.SystemPackages = nil
			o.SourceBuilds = true
			o.Pip = PipConfig{FindLinks: []string{wheels}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script, steps := skillScript(goldenPlan(t, tt.change))
			script = strings.ReplaceAll(script, wheels, "WHEELHOUSE")
			path := filepath.Join("testdata", tt.name+".golden.sh")
			if *updateGolden {
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				require.NoError(t, os.WriteFile(path, []byte(script), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./images -run SkillScriptGolden -update to create it")
			require.Equal(t, string(want), script)
			require.Equal(t, len(steps), strings.Count(script, "\nstep "))
		})
	}
}

func TestSkillScriptWheelsOnlyUnlessSourceBuilds(t *testing.T) {
	wheels, _ := skillScript(goldenPlan(t, func(o *SkillOptions) {}))
	require.Contains(t, wheels, "--only-binary :all:")
	require.NotContains(t, wheels, "setpriv")
	src, _ := skillScript(goldenPlan(t, func(o *SkillOptions) { o.SourceBuilds = true }))
	require.NotContains(t, src, "--only-binary")
	require.Contains(t, src, "setpriv --reuid=65532 --regid=65532 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs")
	for _, s := range []string{wheels, src} {
		require.Contains(t, s, "timeout --kill-after=10 600 apt-get install")
	}
}

func TestSourceBuildsRefuseIndexCredentials(t *testing.T) {
	o := SkillOptions{Skill: "x", Runner: "sandboxrun/runner:1", PythonPackages: []string{"a"}, SourceBuilds: true,
		Pip: PipConfig{IndexURL: "https://user:SECRET@pypi.example.com/simple"}}
	err := o.Validate()
	require.ErrorContains(t, err, "carries credentials")
	require.NotContains(t, err.Error(), "SECRET")
	o.SourceBuilds = false
	require.NoError(t, o.Validate())
	o.SourceBuilds, o.Pip.IndexURL = true, "https://pypi.example.com/simple"
	require.NoError(t, o.Validate())
}

func TestSkillScriptProperties(t *testing.T) {
	t.Run("the index URL is quoted, sources replace PyPI only when given", func(t *testing.T) {
		p := goldenPlan(t, func(o *SkillOptions) {
			o.Pip.IndexURL = "https://u:it's@pypi.example.com/simple"
		})
		script, steps := skillScript(p)
		require.Contains(t, script, `--index-url 'https://u:it'\''s@pypi.example.com/simple'`)
		require.NotContains(t, script, "--no-index")
		for _, s := range steps {
			require.NotContains(t, s.desc, "it's", "progress never shows the password")
		}
	})
	t.Run("find-links alone means no index", func(t *testing.T) {
		wheels := t.TempDir()
		script, steps := skillScript(goldenPlan(t, func(o *SkillOptions) { o.Pip.FindLinks = []string{wheels} }))
		require.Contains(t, script, "--no-index --find-links "+findLinksDir+"/0")
		require.NotContains(t, script, wheels, "the host path does not reach the container")
		require.Contains(t, steps[len(steps)-2].desc, "from only "+wheels)
	})
	t.Run("python packages bring the venv package", func(t *testing.T) {
		script, _ := skillScript(goldenPlan(t, func(o *SkillOptions) { o.SystemPackages = nil }))
		require.Contains(t, script, "apt-get install -y -q --no-install-recommends 'python3-pip-whl'")
		require.Contains(t, script, "python3 -m venv --without-pip --system-site-packages "+VenvPath)
		require.Contains(t, script, "-- 'rich[jupyter]>=13' 'tinypkg'")
	})
	t.Run("no python packages, no venv", func(t *testing.T) {
		script, _ := skillScript(goldenPlan(t, func(o *SkillOptions) { o.PythonPackages = nil }))
		require.NotContains(t, script, "venv")
		require.NotContains(t, script, "pip")
	})
	t.Run("the script removes its inputs last", func(t *testing.T) {
		script, steps := skillScript(goldenPlan(t, nil))
		require.Equal(t, "cleanup", steps[len(steps)-1].name)
		require.True(t, strings.HasSuffix(strings.TrimSpace(script), "rm -rf /var/lib/apt/lists/* /root/.cache "+buildDir))
	})
}

func TestCommitChanges(t *testing.T) {
	labels := skillLabels(goldenPlan(t, nil), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	changes, err := commitChanges(imageConfig{
		User:       "65532:65532",
		Entrypoint: []string{"/usr/local/bin/sandbox-init"},
		WorkingDir: "/workspace",
	}, labels)
	require.NoError(t, err)
	require.Equal(t, []string{
		"USER 65532:65532",
		`ENTRYPOINT ["/usr/local/bin/sandbox-init"]`,
		"CMD []",
		"WORKDIR /workspace",
	}, changes[:4])
	require.True(t, strings.HasPrefix(changes[4], "LABEL "))
	for _, want := range []string{
		`io.sandboxrun.kind="skill"`,
		`io.sandboxrun.managed="true"`,
		`io.sandboxrun.skill="csv-report"`,
		`io.sandboxrun.base.id="` + testRunnerID + `"`,
		`io.sandboxrun.skill.python-packages="[\"rich[jupyter]>=13\",\"tinypkg\"]"`,
		`org.opencontainers.image.created="2026-01-02T03:04:05Z"`,
		`org.opencontainers.image.base.name="sandboxrun/runner:0.1.0"`,
	} {
		require.Contains(t, changes[4], want)
	}

	t.Run("a runner without user or workdir gets explicit defaults", func(t *testing.T) {
		changes, err := commitChanges(imageConfig{}, map[string]string{"a": "b"})
		require.NoError(t, err)
		require.Equal(t, []string{"USER 0", "ENTRYPOINT []", "CMD []", "WORKDIR /", `LABEL a="b"`}, changes)
	})
}

func TestBuildContainerName(t *testing.T) {
	require.Equal(t, "sandboxrun-build-skill-csv-report-0123456789abcdef", buildContainerName("sandboxrun/skill-csv-report:0123456789abcdef"))
	require.True(t, strings.HasPrefix(buildContainerName("sandboxrun/skill-x:1"), BuildContainerPrefix))
}
