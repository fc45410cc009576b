package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackendRules(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       BackendRules
		err        string
	}{
		{name: "omitted is docker", yaml: "network: none\n"},
		{name: "docker", yaml: "backend: docker\n", want: BackendRules{Backend: Backend{Name: "docker", Line: 1}}},
		{name: "kubernetes in cluster", yaml: "backend: kubernetes\nkubernetes:\n  namespace: sbx\n",
			want: BackendRules{Backend: Backend{Name: "kubernetes", Line: 1}, Kubernetes: KubernetesRules{Namespace: "sbx", Line: 3}}},
		{name: "kubernetes full", yaml: "backend: kubernetes\nkubernetes:\n  kubeconfig: /etc/k.yaml\n  namespace: a-b\n  runtime_class: gvisor.v1\n",
			want: BackendRules{Backend: Backend{Name: "kubernetes", Line: 1}, Kubernetes: KubernetesRules{
				Kubeconfig: "/etc/k.yaml", Namespace: "a-b", RuntimeClass: "gvisor.v1", Line: 3}}},
		{name: "warm pool", yaml: "backend: kubernetes\nkubernetes:\n  warm: 4\n  warm_idle: 90s\n",
			want: BackendRules{Backend: Backend{Name: "kubernetes", Line: 1}, Kubernetes: KubernetesRules{
				Warm: 4, WarmIdle: Duration(90 * time.Second), Line: 3}}},
		{name: "warm negative", yaml: "kubernetes:\n  warm: -1\n", err: "kubernetes.warm -1: use 0 (off) to 64 pods"},
		{name: "warm too large", yaml: "kubernetes:\n  warm: 65\n", err: "kubernetes.warm 65"},
		{name: "warm not a number", yaml: "kubernetes:\n  warm: many\n", err: "line 2: kubernetes:"},
		{name: "warm idle too long", yaml: "kubernetes:\n  warm_idle: 2h\n", err: "kubernetes.warm_idle 7200s: use at most 1h0m0s"},
		{name: "warm idle zero", yaml: "kubernetes:\n  warm_idle: 0\n", err: "is not a duration"},
		{name: "unknown backend", yaml: "backend: podman\n", err: `line 1: backend "podman": use docker, kubernetes or oci`},
		{name: "unknown key", yaml: "kubernetes:\n  context: x\n", err: `line 2: kubernetes: unknown key "context"`},
		{name: "relative kubeconfig", yaml: "kubernetes:\n  kubeconfig: k.yaml\n", err: "must be an absolute path"},
		{name: "bad namespace", yaml: "kubernetes:\n  namespace: Sand_Box\n", err: "is not a namespace name"},
		{name: "bad runtime class", yaml: "kubernetes:\n  runtime_class: -x\n", err: "is not a RuntimeClass name"},
		{name: "not a mapping", yaml: "kubernetes: yes\n", err: "expected a mapping"},
		{name: "claims", yaml: "backend: kubernetes\nkubernetes:\n  claims:\n    - {name: sandbox-skills, path: /srv/skills}\n    - {name: work.v1, path: /srv/skills2}\n  host_paths: false\n",
			want: BackendRules{Backend: Backend{Name: "kubernetes", Line: 1}, Kubernetes: KubernetesRules{
				Claims: []ClaimRule{{Name: "sandbox-skills", Path: "/srv/skills"}, {Name: "work.v1", Path: "/srv/skills2"}}, HostPaths: new(false), Line: 3}}},
		{name: "claim name", yaml: "kubernetes:\n  claims: [{name: Skills, path: /srv}]\n", err: `kubernetes.claims[0].name "Skills" is not a volume claim name`},
		{name: "claim without path", yaml: "kubernetes:\n  claims: [{name: s}]\n", err: `kubernetes.claims[0].path ""`},
		{name: "claim relative path", yaml: "kubernetes:\n  claims: [{name: s, path: srv/skills}]\n", err: "absolute, clean folder"},
		{name: "claim unclean path", yaml: "kubernetes:\n  claims: [{name: s, path: /srv/../etc}]\n", err: "absolute, clean folder"},
		{name: "claim of the root", yaml: "kubernetes:\n  claims: [{name: s, path: /}]\n", err: "other than /"},
		{name: "claim twice", yaml: "kubernetes:\n  claims: [{name: s, path: /a}, {name: s, path: /b}]\n", err: `both name claim "s"`},
		{name: "claims overlap", yaml: "kubernetes:\n  claims: [{name: s, path: /srv}, {name: t, path: /srv/skills}]\n", err: "overlap"},
		{name: "claim unknown key", yaml: "kubernetes:\n  claims: [{name: s, path: /a, mode: rw}]\n", err: `line 2: kubernetes.claims: unknown key "mode"`},
		{name: "isolation targets", yaml: "backend: kubernetes\nkubernetes:\n  isolation_targets: [10.96.0.10:53, '[fd00::a]:53', sandboxrun-0.sandboxrun-headless.sbx.svc:8080]\n  isolation_recheck: 2m\n",
			want: BackendRules{Backend: Backend{Name: "kubernetes", Line: 1}, Kubernetes: KubernetesRules{
				IsolationTargets: []string{"10.96.0.10:53", "[fd00::a]:53", "sandboxrun-0.sandboxrun-headless.sbx.svc:8080"},
				IsolationRecheck: Duration(2 * time.Minute), Line: 3}}},
		{name: "isolation defaults off", yaml: "kubernetes:\n  isolation_cluster_dns: false\n  isolation_api_server: false\n",
			want: BackendRules{Kubernetes: KubernetesRules{IsolationClusterDNS: new(false), IsolationAPIServer: new(false), Line: 2}}},
		{name: "isolation target without port", yaml: "kubernetes:\n  isolation_targets: [10.96.0.10]\n", err: `line 2: kubernetes.isolation_targets[0]: "10.96.0.10": address 10.96.0.10: missing port`},
		{name: "isolation target bad port", yaml: "kubernetes:\n  isolation_targets: ['a:0']\n", err: "a port from 1 to 65535"},
		{name: "isolation recheck too short", yaml: "kubernetes:\n  isolation_recheck: 5s\n", err: "kubernetes.isolation_recheck 5s: use 30s to 1h0m0s"},
		{name: "skills sent", yaml: "kubernetes:\n  host_paths: false\n  skills: send\n  skill_send_max: 4Mi\n",
			want: BackendRules{Kubernetes: KubernetesRules{HostPaths: new(false), Skills: SkillsSend, SkillSendMax: 4 << 20, Line: 2}}},
		{name: "skills mounted", yaml: "kubernetes:\n  skills: mount\n", want: BackendRules{Kubernetes: KubernetesRules{Skills: SkillsMount, Line: 2}}},
		{name: "skills unknown", yaml: "kubernetes:\n  skills: copy\n", err: `line 2: kubernetes.skills "copy": use mount`},
		{name: "skill guard modes", yaml: "kubernetes:\n  skills: send\n  skill_send_guard: modes\n",
			want: BackendRules{Kubernetes: KubernetesRules{Skills: SkillsSend, SkillSendGuard: SkillGuardModes, Line: 2}}},
		{name: "skill guard unknown", yaml: "kubernetes:\n  skills: send\n  skill_send_guard: none\n", err: "kubernetes.skill_send_guard \"none\": use landlock"},
		{name: "skill guard without sending", yaml: "kubernetes:\n  skill_send_guard: modes\n", err: "skill_send_guard is set but skills are not sent"},
		{name: "skill send max without sending", yaml: "kubernetes:\n  skill_send_max: 4Mi\n", err: "add kubernetes.skills: send"},
		{name: "skill send max too large", yaml: "kubernetes:\n  skills: send\n  skill_send_max: 1Gi\n", err: "kubernetes.skill_send_max 1GiB: use at most 256MiB"},
		{name: "skill send max bare", yaml: "kubernetes:\n  skills: send\n  skill_send_max: 4096\n", err: "line 2: kubernetes:"},
		{name: "host paths not a bool", yaml: "kubernetes:\n  host_paths: sometimes\n", err: "line 2: kubernetes:"},
		{name: "usr volumes off", yaml: "docker:\n  usr_volumes: false\n", want: BackendRules{Docker: DockerRules{UsrVolumes: new(false), Line: 2}}},
		{name: "docker unknown key", yaml: "docker:\n  usr_volume: false\n", err: `line 2: docker: unknown key "usr_volume" (known: [usr_volumes warm_pool])`},
		{name: "warm pool of the docker backend", yaml: "docker:\n  warm_pool:\n    max: 8\n    idle: 2m\n",
			want: BackendRules{Docker: DockerRules{WarmPool: WarmPoolRules{Max: new(8), Idle: Duration(2 * time.Minute), Line: 3}, Line: 2}}},
		{name: "docker warm pool off", yaml: "docker:\n  warm_pool: {max: 0}\n",
			want: BackendRules{Docker: DockerRules{WarmPool: WarmPoolRules{Max: new(0), Line: 2}, Line: 2}}},
		{name: "docker warm pool negative", yaml: "docker:\n  warm_pool: {max: -1}\n", err: "line 2: docker.warm_pool.max -1: use 0 (off) to 64 containers"},
		{name: "docker warm pool too large", yaml: "docker:\n  warm_pool: {max: 65}\n", err: "docker.warm_pool.max 65"},
		{name: "docker warm pool idle too long", yaml: "docker:\n  warm_pool: {idle: 2h}\n", err: "docker.warm_pool.idle 7200s"},
		{name: "docker warm pool unknown key", yaml: "docker:\n  warm_pool: {size: 2}\n", err: `docker.warm_pool: unknown key "size" (known: [max idle])`},
		{name: "docker warm pool not a mapping", yaml: "docker:\n  warm_pool: 4\n", err: "docker.warm_pool: expected a mapping"},
		{name: "usr volumes not a bool", yaml: "docker:\n  usr_volumes: maybe\n", err: "line 2: docker:"},
		{name: "docker not a mapping", yaml: "docker: off\n", err: "docker: expected a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParsePolicy("p.yaml", []byte(tt.yaml))
			if tt.err != "" {
				require.ErrorIs(t, err, ErrPolicyFile)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, o.BackendRules)
		})
	}
	require.Equal(t, BackendDocker, BuiltinPolicy().Backend.Kind())
}

func TestWarmIdleDefault(t *testing.T) {
	require.Equal(t, DefaultWarmIdle, WarmPoolRules{}.IdleOrDefault())
	require.Equal(t, DefaultWarmPoolMax, WarmPoolRules{}.MaxOrDefault())
	require.Equal(t, 0, WarmPoolRules{Max: new(0)}.MaxOrDefault())
	require.Equal(t, DefaultWarmIdle, KubernetesRules{}.WarmIdleOrDefault())
	require.Equal(t, time.Minute, KubernetesRules{WarmIdle: Duration(time.Minute)}.WarmIdleOrDefault())
	require.Zero(t, BuiltinPolicy().Kubernetes.Warm, "off unless the operator sets it")
}

func TestSkillSendDefaults(t *testing.T) {
	require.False(t, BuiltinPolicy().Kubernetes.SendsSkills())
	require.EqualValues(t, DefaultSkillSendMax, KubernetesRules{Skills: SkillsSend}.SkillSendMaxOrDefault())
	require.EqualValues(t, 1<<20, KubernetesRules{Skills: SkillsSend, SkillSendMax: 1 << 20}.SkillSendMaxOrDefault())
}

func TestHostPathsDefault(t *testing.T) {
	require.True(t, BuiltinPolicy().Kubernetes.HostPathsAllowed())
	require.False(t, KubernetesRules{HostPaths: new(false)}.HostPathsAllowed())
}

func TestUsrVolumesDefault(t *testing.T) {
	require.True(t, BuiltinPolicy().Docker.UsrVolumesOn(), "on unless the operator turns it off")
	require.False(t, DockerRules{UsrVolumes: new(false)}.UsrVolumesOn())
	require.True(t, DockerRules{UsrVolumes: new(true)}.UsrVolumesOn())
}
