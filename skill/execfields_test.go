package skill

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandboxrun/sandboxrun/policy"
)

func TestExecFieldsBothSpellings(t *testing.T) {
	want := Manifest{
		Version:          "1.2.0",
		MaxExecutionTime: 60,
		MaxMemoryMiB:     256,
		MaxCPUs:          0.5,
		NetworkAccess:    true,
		AllowedDomains:   []string{"*.example.org:8443", "api.example.com"},
		PythonPackages:   []string{"pandas>=2", "requests[socks]"},
		SystemPackages:   []string{"libxml2", "curl=7.88.1-10"},
		Runtime:          "python3",
		Secrets:          []string{"GITHUB_TOKEN", "SLACK_TOKEN"},
	}
	top := `version: 1.2.0
max_execution_time: 60
max_memory: 256
max_cpus: 0.5
network_access: true
allowed_domains: [API.example.com., "*.example.org:8443"]
python_packages:
  - pandas>=2
  - requests[socks]
system_packages: [libxml2, curl=7.88.1-10]
runtime: python3
secrets: [GITHUB_TOKEN, SLACK_TOKEN]
`
	meta := `metadata:
  version: "1.2.0"
  max_execution_time: "60"
  max_memory: "256"
  max_cpus: "0.5"
  network_access: "true"
  allowed_domains: "*.example.org:8443, api.example.com"
  python_packages: "pandas>=2, requests[socks]"
  system_packages: "libxml2 curl=7.88.1-10"
  runtime: "python3"
  secrets: "GITHUB_TOKEN, SLACK_TOKEN"
`
	tests := []struct {
		name   string
		front  string
		strict int // how many strict-only problems
	}{
		{"top level", top, 10},
		{"metadata", meta, 0},
		{"both, agreeing", top + meta, 10},
		{"top-level strings", "max_memory: \"256\"\n" + meta, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, probs := decodeFront(t, minimalFront+tt.front)
			require.Empty(t, messages(probs, sevFatal))
			require.Len(t, messages(probs, sevStrict), tt.strict)
			require.Equal(t, want.Version, m.Version)
			require.Equal(t, want.MaxExecutionTime, m.MaxExecutionTime)
			require.Equal(t, want.MaxMemoryMiB, m.MaxMemoryMiB)
			require.InDelta(t, want.MaxCPUs, m.MaxCPUs, 0)
			require.Equal(t, want.NetworkAccess, m.NetworkAccess)
			require.Equal(t, want.AllowedDomains, m.AllowedDomains)
			require.ElementsMatch(t, want.PythonPackages, m.PythonPackages)
			require.ElementsMatch(t, want.SystemPackages, m.SystemPackages)
			require.Equal(t, want.Runtime, m.Runtime)
		})
	}
}

func TestExecFieldsDisagree(t *testing.T) {
	tests := []struct {
		name  string
		front string
		want  string
	}{
		{"memory", "max_memory: 256\nmetadata:\n  max_memory: \"512\"\n",
			"`max_memory` (256) and `metadata.max_memory` (line 6: \"512\") disagree; keep only `metadata.max_memory`"},
		{"network", "network_access: true\nmetadata:\n  network_access: \"false\"\n", "`network_access` (true) and `metadata.network_access`"},
		{"packages", "python_packages: [a, b]\nmetadata:\n  python_packages: \"a c\"\n", "`python_packages` ([a, b]) and `metadata.python_packages`"},
		{"runtime", "runtime: node\nmetadata:\n  runtime: bash\n", "`runtime` (\"node\") and `metadata.runtime` (line 6: \"bash\")"},
		{"domains", "allowed_domains: [a.example.com]\nmetadata:\n  allowed_domains: \"a.example.com b.example.com\"\n", "`allowed_domains` ([a.example.com]) and `metadata.allowed_domains`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, probs := decodeFront(t, minimalFront+tt.front)
			requireOneContaining(t, messages(probs, sevFatal), tt.want)
		})
	}
	// The same packages in another order agree.
	m, probs := decodeFront(t, minimalFront+"python_packages: [b, a]\nmetadata:\n  python_packages: \"a,b\"\n")
	require.Empty(t, messages(probs, sevFatal))
	require.ElementsMatch(t, []string{"a", "b"}, m.PythonPackages)
}

func TestExecFieldBounds(t *testing.T) {
	tests := []struct {
		name  string
		field string
		value string
		want  string // "" when accepted
	}{
		{"timeout 1", "max_execution_time", "1", ""},
		{"timeout 600", "max_execution_time", "600", ""},
		{"timeout 0", "max_execution_time", "0", "whole seconds from 1 to 600"},
		{"timeout 601", "max_execution_time", "601", `is "601"`},
		{"timeout fraction", "max_execution_time", "1.5", "whole seconds"},
		{"timeout unit", "max_execution_time", "30s", "whole seconds"},
		{"timeout list", "max_execution_time", "[1]", "is a YAML list"},
		{"memory 16", "max_memory", "16", ""},
		{"memory 15", "max_memory", "15", "at least 16"},
		{"memory negative", "max_memory", "-1", "at least 16"},
		{"memory unit", "max_memory", "512Mi", "whole number of MiB"},
		{"memory huge", "max_memory", "99999999999999999999", "at most"},
		{"cpus fraction", "max_cpus", "0.25", ""},
		{"cpus 0", "max_cpus", "0", "above 0"},
		{"cpus negative", "max_cpus", "-1", "above 0"},
		{"cpus nan", "max_cpus", ".nan", "above 0"},
		{"cpus inf", "max_cpus", ".inf", "above 0"},
		{"cpus exponent", "max_cpus", "1e3", "above 0"},
		{"cpus huge", "max_cpus", "2048", "at most 1024"},
		{"network true", "network_access", "True", ""},
		{"network false", "network_access", "false", ""},
		{"network yes", "network_access", "yes", "must be true or false"},
		{"network 1", "network_access", "1", "must be true or false"},
		{"version empty", "version", `""`, "is empty"},
		{"runtime alias", "runtime", "Python", ""},
		{"runtime blank", "runtime", `"python 3"`, "it must be one of bash, node, python, python3, sh"},
		{"runtime unknown", "runtime", "ruby", `is "ruby"`},
		{"python option", "python_packages", "[--index-url=http://evil]", "not a pip requirement"},
		{"python shell", "python_packages", `"a;rm"`, "not a pip requirement"},
		{"system option", "system_packages", "[-y]", "not a Debian package name"},
		{"system uppercase", "system_packages", "[Foo]", "not a Debian package name"},
		{"packages mapping", "system_packages", "{a: b}", "is a YAML mapping"},
		{"packages nested", "python_packages", "[[a]]", "not a string"},
		{"domains list", "allowed_domains", "[api.example.com, \"*.example.org\"]", ""},
		{"domains string", "allowed_domains", "\"api.example.com,pypi.org:443\"", ""},
		{"domains tld wildcard", "allowed_domains", "[\"*.com\"]", "top-level domain"},
		{"domains scheme", "allowed_domains", "[\"https://api.example.com\"]", "without a scheme"},
		{"domains numeric", "allowed_domains", "[127.1]", "ends in a number"},
		{"domains empty", "allowed_domains", "\"\"", "is empty"},
		{"domains mapping", "allowed_domains", "{a: b}", "is a YAML mapping"},
		{"domains nested", "allowed_domains", "[[a.com]]", "not a string"},
		{"secrets list", "secrets", "[GITHUB_TOKEN, X_KEY]", ""},
		{"secrets string", "secrets", "\"GITHUB_TOKEN X_KEY\"", ""},
		{"secrets bad name", "secrets", "[github-token]", "cannot be a secret's variable"},
		{"secrets reserved", "secrets", "[PATH]", "cannot be a secret's variable"},
		{"secrets code loading", "secrets", "[LD_PRELOAD]", "cannot be a secret's variable"},
		{"secrets empty", "secrets", "\"\"", "is empty"},
		{"secrets mapping", "secrets", "{a: b}", "is a YAML mapping"},
	}
	for _, tt := range tests {
		for _, where := range []string{"top", "metadata"} {
			t.Run(tt.name+"/"+where, func(t *testing.T) {
				front := tt.field + ": " + tt.value + "\n"
				spelled := "`" + tt.field + "`"
				if where == "metadata" {
					front = "metadata:\n  " + front
					spelled = "`metadata." + tt.field + "`"
				}
				_, probs := decodeFront(t, minimalFront+front)
				fatal := messages(probs, sevFatal)
				if tt.want == "" {
					require.Empty(t, fatal)
					return
				}
				requireOneContaining(t, fatal, tt.want)
				requireOneContaining(t, fatal, spelled)
			})
		}
	}
}

func TestAllowedDomainsWithoutNetworkAccessWarns(t *testing.T) {
	m, probs := decodeFront(t, minimalFront+"metadata:\n  allowed_domains: \"api.example.com\"\n")
	require.Empty(t, messages(probs, sevFatal))
	requireOneContaining(t, messages(probs, sevWarn), "`allowed_domains` has no effect without `network_access: true`")
	require.Equal(t, []string{"api.example.com"}, m.AllowedDomains)
	_, probs = decodeFront(t, minimalFront+"metadata:\n  allowed_domains: \"api.example.com\"\n  network_access: \"true\"\n")
	require.Empty(t, messages(probs, sevWarn))
}

func TestSecretsWithoutNetworkAccessWarns(t *testing.T) {
	m, probs := decodeFront(t, minimalFront+"secrets: [GITHUB_TOKEN]\n")
	require.Empty(t, messages(probs, sevFatal))
	requireOneContaining(t, messages(probs, sevWarn), "`secrets` has no effect without `network_access: true`")
	require.Equal(t, []string{"GITHUB_TOKEN"}, m.Secrets)
	s := &Skill{Manifest: m}
	require.Equal(t, []string{"GITHUB_TOKEN"}, s.Limits().Secrets)
}

func TestLimits(t *testing.T) {
	m, probs := decodeFront(t, minimalFront+"metadata:\n  max_execution_time: \"45\"\n  max_memory: \"128\"\n  max_cpus: \"1.5\"\n  network_access: \"true\"\n  allowed_domains: \"pypi.org\"\n")
	require.Empty(t, messages(probs, sevFatal))
	s := &Skill{Manifest: m}
	require.Equal(t, policy.SkillLimits{Timeout: 45 * time.Second, MemoryMiB: 128, CPUs: 1.5, Network: true, AllowedDomains: []string{"pypi.org"}}, s.Limits())
	require.Equal(t, policy.SkillLimits{}, (&Skill{}).Limits(), "unset fields stay zero so policy defaults apply")
}
