//go:build helm

// Package helm checks the Helm chart in deploy/helm/sandboxrun: lint and
// template with the default, a full and the test cluster's values, the
// rendered objects' security settings and policies (TestChart*, no cluster
// needed), and an install of two replicas on the test cluster
// (TestCluster*, under hack/with-k8s.sh), and with the production values
// on its Pod-network profile (TestPodnet*, make test-podnet). make
// test-helm runs all three; helm comes from hack/helm-build.sh through
// $SANDBOXRUN_HELM.
package helm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/sandboxrun/sandboxrun/policy"
)

const chartDir = "../../deploy/helm/sandboxrun"

// helmBin is $SANDBOXRUN_HELM; without it the test fails, naming the fix.
func helmBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SANDBOXRUN_HELM")
	if bin == "" {
		t.Fatal("SANDBOXRUN_HELM is not set: run make test-helm, or SANDBOXRUN_HELM=$(hack/helm-build.sh | tail -n 1)")
	}
	return bin
}

// helm runs helm with args and returns its stdout; stderr goes in the error.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), errors.Join(err, errors.New(errb.String()))
	}
	return out.String(), nil
}

// valueSets are the values files every check runs with: nil is the chart's
// defaults.
var valueSets = map[string][]string{
	"default": nil,
	"full":    {"-f", "testdata/full-values.yaml"},
	"test":    {"-f", "testdata/hostnetwork-values.yaml"},
	"podnet":  {"-f", "testdata/podnet-values.yaml", "-f", "testdata/podnet-egress-values.yaml"},
}

func TestChartLint(t *testing.T) {
	for name, values := range valueSets {
		t.Run(name, func(t *testing.T) {
			out, err := helm(t, append([]string{"lint", "--strict", chartDir}, values...)...)
			require.NoError(t, err, out)
			require.Contains(t, out, "0 chart(s) failed")
			require.NotContains(t, out, "[WARNING]")
		})
	}
}

// objects is one rendering of the chart, decoded by kind.
type objects map[string][]map[string]any

func render(t *testing.T, args ...string) objects {
	t.Helper()
	out, err := helm(t, append([]string{"template", "rel", chartDir, "--namespace", "agents"}, args...)...)
	require.NoError(t, err)
	objs := objects{}
	dec := k8syaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if o == nil {
			continue
		}
		kind, _ := o["kind"].(string)
		objs[kind] = append(objs[kind], o)
	}
	return objs
}

// one converts the only object of kind into out.
func (o objects) one(t *testing.T, kind string, out any) {
	t.Helper()
	require.Len(t, o[kind], 1, "one %s", kind)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o[kind][0], out))
}

// in converts the only object of kind in namespace ns into out.
func (o objects) in(t *testing.T, kind, ns string, out any) {
	t.Helper()
	var found []map[string]any
	for _, obj := range o[kind] {
		if md, _ := obj["metadata"].(map[string]any); md["namespace"] == ns {
			found = append(found, obj)
		}
	}
	require.Len(t, found, 1, "one %s in %s", kind, ns)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(found[0], out))
}

func TestChartTemplateDefaults(t *testing.T) {
	objs := render(t)
	kinds := []string{}
	for k := range objs {
		kinds = append(kinds, k)
	}
	require.ElementsMatch(t, []string{"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
		"ConfigMap", "Service", "StatefulSet", "NetworkPolicy", "PodDisruptionBudget", "Pod"}, kinds,
		"no Secret (tokens come from an existing one), no Namespace (sandboxes share the release's), no Ingress or ServiceMonitor by default")

	t.Run("the server is locked down", func(t *testing.T) {
		var sts appsv1.StatefulSet
		objs.one(t, "StatefulSet", &sts)
		pod := sts.Spec.Template.Spec
		require.False(t, pod.HostNetwork)
		require.True(t, *pod.SecurityContext.RunAsNonRoot)
		require.EqualValues(t, 65532, *pod.SecurityContext.RunAsUser)
		require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
		require.Len(t, pod.Containers, 1)
		c := pod.Containers[0]
		require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
		require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
		require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
		require.Empty(t, c.SecurityContext.Capabilities.Add)
		for _, v := range pod.Volumes {
			require.Nil(t, v.HostPath, "volume %s", v.Name)
		}
		require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
		require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
		require.Equal(t, "rel-sandboxrun-headless", sts.Spec.ServiceName)
		require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
		require.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, sts.Spec.VolumeClaimTemplates[0].Spec.AccessModes)
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		require.Equal(t, "metadata.name", env["SANDBOXRUN_REPLICA"].ValueFrom.FieldRef.FieldPath)
		require.Equal(t, "http://{replica}.rel-sandboxrun-headless.agents.svc.cluster.local:8080", env["SANDBOXRUN_PEER_URL"].Value)
		require.Equal(t, "2", env["SANDBOXRUN_REPLICAS"].Value, "a list of sessions asks every replica")
		require.Contains(t, c.Args, "--tokens=/etc/sandboxrun/tokens/tokens")
		require.Contains(t, c.Args, "--policy=/etc/sandboxrun/policy/$(POD_NAME).yaml")
	})

	t.Run("the role is what the backend needs", func(t *testing.T) {
		var role rbacv1.Role
		objs.in(t, "Role", "agents", &role)
		require.Equal(t, []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"pods/attach"}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"limitranges"}, Verbs: []string{"list"}},
		}, role.Rules)
		var cr rbacv1.ClusterRole
		objs.one(t, "ClusterRole", &cr)
		require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}}, cr.Rules)
		// The isolation probe reads the cluster DNS Service, and no other.
		var dns rbacv1.Role
		objs.in(t, "Role", "kube-system", &dns)
		require.Equal(t, []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services"}, ResourceNames: []string{"kube-dns"}, Verbs: []string{"get"}},
		}, dns.Rules)
		var b rbacv1.RoleBinding
		objs.in(t, "RoleBinding", "kube-system", &b)
		require.Equal(t, dns.Name, b.RoleRef.Name)
		// And the API server's Service, and no other.
		var api rbacv1.Role
		objs.in(t, "Role", "default", &api)
		require.Equal(t, []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services"}, ResourceNames: []string{"kubernetes"}, Verbs: []string{"get"}},
		}, api.Rules)
		objs.in(t, "RoleBinding", "default", &b)
		require.Equal(t, api.Name, b.RoleRef.Name)
		require.Len(t, render(t, "--set", "sandbox.isolation.clusterDNS=false")["RoleBinding"], 2, "clusterDNS off: no Role in kube-system")
		require.Len(t, render(t, "--set", "sandbox.isolation.clusterDNS=false", "--set", "sandbox.isolation.apiServer=false")["RoleBinding"], 1,
			"both off: the sandbox namespace's alone")
		var cm corev1.ConfigMap
		render(t, "--set", "sandbox.isolation.apiServer=false").one(t, "ConfigMap", &cm)
		pol, err := policy.ParsePolicy("p.yaml", []byte(cm.Data["rel-sandboxrun-0.yaml"]))
		require.NoError(t, err)
		require.False(t, *pol.Kubernetes.IsolationAPIServer)
	})

	t.Run("sandbox pods get no traffic", func(t *testing.T) {
		var np networkingv1.NetworkPolicy
		objs.one(t, "NetworkPolicy", &np)
		require.Equal(t, map[string]string{"io.sandboxrun.managed": "true"}, np.Spec.PodSelector.MatchLabels)
		require.ElementsMatch(t, []networkingv1.PolicyType{"Ingress", "Egress"}, np.Spec.PolicyTypes)
		require.Empty(t, np.Spec.Ingress)
		require.Empty(t, np.Spec.Egress)
	})

	t.Run("each replica's policy parses", func(t *testing.T) {
		var cm corev1.ConfigMap
		objs.one(t, "ConfigMap", &cm)
		require.Len(t, cm.Data, 2)
		for _, name := range []string{"rel-sandboxrun-0", "rel-sandboxrun-1"} {
			pol, err := policy.ParsePolicy(name+".yaml", []byte(cm.Data[name+".yaml"]))
			require.NoError(t, err, cm.Data[name+".yaml"])
			require.Equal(t, policy.BackendKubernetes, pol.Backend.Name)
			require.Equal(t, "agents", pol.Kubernetes.Namespace)
			require.False(t, pol.Kubernetes.HostPathsAllowed(), "no hostPath on a cluster")
			require.Equal(t, []policy.ClaimRule{{Name: "sandboxrun-skills", Path: "/srv/sandboxrun/skills"}}, pol.Kubernetes.Claims,
				"writable sessions travel over the attach: no claim for them")
			require.Equal(t, "/var/lib/sandboxrun/sessions/sessions", pol.Sessions.Root.Value)
			require.True(t, pol.Sessions.Write.Value)
			require.Equal(t, "none", pol.Network.Value, "the chart's default policy gives no sandbox a network")
			require.Equal(t, []string{name + ".rel-sandboxrun-headless.agents.svc.cluster.local:8080"}, pol.Kubernetes.IsolationTargets,
				"the isolation probe tries the replica's own address")
			require.Equal(t, 5*time.Minute, time.Duration(pol.Kubernetes.IsolationRecheck))
		}
	})

	t.Run("no self target on the node's network", func(t *testing.T) {
		var cm corev1.ConfigMap
		render(t, "-f", "testdata/hostnetwork-values.yaml").one(t, "ConfigMap", &cm)
		for name, text := range cm.Data {
			pol, err := policy.ParsePolicy(name, []byte(text))
			require.NoError(t, err)
			require.Empty(t, pol.Kubernetes.IsolationTargets, "a replica's address is the node's, which a NetworkPolicy may not filter")
		}
	})

	t.Run("read-only sessions are mounted from each replica's own claim", func(t *testing.T) {
		var cm corev1.ConfigMap
		render(t, "--set", "policy.sessions.write=false").one(t, "ConfigMap", &cm)
		for i, name := range []string{"rel-sandboxrun-0", "rel-sandboxrun-1"} {
			pol, err := policy.ParsePolicy(name+".yaml", []byte(cm.Data[name+".yaml"]))
			require.NoError(t, err)
			require.False(t, pol.Sessions.Write.Value)
			require.Equal(t, []policy.ClaimRule{
				{Name: "sandboxrun-skills", Path: "/srv/sandboxrun/skills"},
				{Name: fmt.Sprintf("sessions-rel-sandboxrun-%d", i), Path: "/var/lib/sandboxrun/sessions"},
			}, pol.Kubernetes.Claims)
		}
	})
}

// TestChartUploads: with uploads on, every replica mounts one
// ReadWriteMany claim read-write as its upload store, and the backend
// gets the claim, so sandbox Pods mount an upload's folder from it
// read-only; one replica may keep its uploads beside its sessions.
func TestChartUploads(t *testing.T) {
	objs := render(t, "--set", "uploads.enabled=true", "--set", "policy.skill_uploads.max_versions=3")
	var pvc corev1.PersistentVolumeClaim
	objs.one(t, "PersistentVolumeClaim", &pvc)
	require.Equal(t, "rel-sandboxrun-uploads", pvc.Name)
	require.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, pvc.Spec.AccessModes)
	require.Equal(t, "keep", pvc.Annotations["helm.sh/resource-policy"], "uploads outlive an uninstall unless told")
	var sts appsv1.StatefulSet
	objs.one(t, "StatefulSet", &sts)
	pod := sts.Spec.Template.Spec
	var claim string
	for _, v := range pod.Volumes {
		if v.Name == "uploads" {
			claim = v.PersistentVolumeClaim.ClaimName
			require.False(t, v.PersistentVolumeClaim.ReadOnly)
		}
	}
	require.Equal(t, "rel-sandboxrun-uploads", claim)
	mounted := false
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.Name == "uploads" {
			mounted = true
			require.Equal(t, "/var/lib/sandboxrun/uploads", m.MountPath)
			require.False(t, m.ReadOnly, "the server writes uploads")
		}
	}
	require.True(t, mounted)
	var cm corev1.ConfigMap
	objs.one(t, "ConfigMap", &cm)
	for _, name := range []string{"rel-sandboxrun-0", "rel-sandboxrun-1"} {
		pol, err := policy.ParsePolicy(name+".yaml", []byte(cm.Data[name+".yaml"]))
		require.NoError(t, err, cm.Data[name+".yaml"])
		require.True(t, pol.SkillUploads.Enabled())
		require.Equal(t, "/var/lib/sandboxrun/uploads", pol.SkillUploads.Store.Value, "every replica's store is the shared claim")
		require.EqualValues(t, 3, pol.SkillUploads.MaxVersions.Value, "the user's skill_uploads keys are kept")
		require.Equal(t, []policy.ClaimRule{
			{Name: "sandboxrun-skills", Path: "/srv/sandboxrun/skills"},
			{Name: "rel-sandboxrun-uploads", Path: "/var/lib/sandboxrun/uploads"},
		}, pol.Kubernetes.Claims, "sandbox Pods mount uploads from the claim, never a node path")
	}

	t.Run("an existing claim", func(t *testing.T) {
		objs := render(t, "--set", "uploads.enabled=true", "--set", "uploads.existingClaim=shared", "--set", "sandbox.namespace=sbx")
		require.Empty(t, objs["PersistentVolumeClaim"])
		var cm corev1.ConfigMap
		objs.one(t, "ConfigMap", &cm)
		pol, err := policy.ParsePolicy("p.yaml", []byte(cm.Data["rel-sandboxrun-0.yaml"]))
		require.NoError(t, err)
		require.Equal(t, "shared", pol.Kubernetes.Claims[1].Name)
	})
	t.Run("one replica keeps uploads beside its sessions", func(t *testing.T) {
		objs := render(t, "--set", "replicas=1", "--set", "policy.skill_uploads.allow=tokens")
		require.Empty(t, objs["PersistentVolumeClaim"])
	})
}

// TestChartSkillsSent: skills.send has the server send each run's skill
// to its Pod (kubernetes.skills: send, with the cap and the guard), and no
// sandbox Pod mounts the skills claim: it is the server's alone.
func TestChartSkillsSent(t *testing.T) {
	objs := render(t, "--set", "skills.send=true", "--set", "skills.sendMax=32Mi", "--set", "uploads.enabled=true")
	var sts appsv1.StatefulSet
	objs.one(t, "StatefulSet", &sts)
	claim := ""
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == "skills" {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	require.Equal(t, "sandboxrun-skills", claim, "the server still reads the skills from the claim")
	var cm corev1.ConfigMap
	objs.one(t, "ConfigMap", &cm)
	for _, name := range []string{"rel-sandboxrun-0", "rel-sandboxrun-1"} {
		pol, err := policy.ParsePolicy(name+".yaml", []byte(cm.Data[name+".yaml"]))
		require.NoError(t, err, cm.Data[name+".yaml"])
		require.True(t, pol.Kubernetes.SendsSkills())
		require.EqualValues(t, 32<<20, pol.Kubernetes.SkillSendMaxOrDefault())
		require.False(t, pol.Kubernetes.SkillModesOnly(), "a node without Landlock fails the run unless told")
		require.False(t, pol.Kubernetes.HostPathsAllowed())
		require.Equal(t, []policy.ClaimRule{{Name: "rel-sandboxrun-uploads", Path: "/var/lib/sandboxrun/uploads"}}, pol.Kubernetes.Claims,
			"sandbox Pods mount uploads from their claim, and nothing of the skills claim")
	}

	objs = render(t, "--set", "skills.send=true", "--set", "skills.sendGuard=modes")
	objs.one(t, "ConfigMap", &cm)
	pol, err := policy.ParsePolicy("p.yaml", []byte(cm.Data["rel-sandboxrun-0.yaml"]))
	require.NoError(t, err)
	require.True(t, pol.Kubernetes.SkillModesOnly())
	require.Empty(t, pol.Kubernetes.Claims)

	for _, bad := range [][]string{{"--set", "skills.sendGuard=none"}, {"--set", "skills.sendMax=lots"}} {
		_, err := helm(t, append([]string{"template", release, chartDir}, bad...)...)
		require.Error(t, err, "%v", bad)
	}
}

// TestChartUpstreamCA: egress.upstreamCA mounts the PEM read-only into
// the server and sets the policy's egress.upstream_ca to it, keeping the
// user's other egress keys; the NetworkPolicy still selects sandbox Pods
// only, so the replicas reach the upstream hosts themselves.
func TestChartUpstreamCA(t *testing.T) {
	for _, source := range []string{"configMap", "secret"} {
		t.Run(source, func(t *testing.T) {
			objs := render(t, "--set", "egress.upstreamCA."+source+"=internal-ca", "--set", "egress.upstreamCA.key=roots.pem",
				"--set", "policy.egress.allow_cidrs={10.20.0.0/16}")
			var sts appsv1.StatefulSet
			objs.one(t, "StatefulSet", &sts)
			pod := sts.Spec.Template.Spec
			var vol *corev1.Volume
			for i := range pod.Volumes {
				if pod.Volumes[i].Name == "upstream-ca" {
					vol = &pod.Volumes[i]
				}
			}
			require.NotNil(t, vol, "a volume for the upstream CA")
			items := []corev1.KeyToPath{{Key: "roots.pem", Path: "ca.pem"}}
			if source == "configMap" {
				require.Nil(t, vol.Secret)
				require.Equal(t, "internal-ca", vol.ConfigMap.Name)
				require.Equal(t, items, vol.ConfigMap.Items)
			} else {
				require.Nil(t, vol.ConfigMap)
				require.Equal(t, "internal-ca", vol.Secret.SecretName)
				require.Equal(t, items, vol.Secret.Items)
			}
			var mount *corev1.VolumeMount
			for i, m := range pod.Containers[0].VolumeMounts {
				if m.Name == "upstream-ca" {
					mount = &pod.Containers[0].VolumeMounts[i]
				}
			}
			require.NotNil(t, mount)
			require.Equal(t, "/etc/sandboxrun/upstream-ca", mount.MountPath)
			require.True(t, mount.ReadOnly)
			var cm corev1.ConfigMap
			objs.one(t, "ConfigMap", &cm)
			// Read as YAML: the policy's own parser would open the CA
			// file, which exists in the server's container only.
			for _, name := range []string{"rel-sandboxrun-0", "rel-sandboxrun-1"} {
				var pol struct {
					Egress struct {
						UpstreamCA string   `yaml:"upstream_ca"`
						AllowCIDRs []string `yaml:"allow_cidrs"`
					} `yaml:"egress"`
				}
				require.NoError(t, yaml.Unmarshal([]byte(cm.Data[name+".yaml"]), &pol), cm.Data[name+".yaml"])
				require.Equal(t, "/etc/sandboxrun/upstream-ca/ca.pem", pol.Egress.UpstreamCA)
				require.Equal(t, []string{"10.20.0.0/16"}, pol.Egress.AllowCIDRs, "the user's egress keys are kept")
			}
			var np networkingv1.NetworkPolicy
			objs.one(t, "NetworkPolicy", &np)
			require.Equal(t, map[string]string{"io.sandboxrun.managed": "true"}, np.Spec.PodSelector.MatchLabels,
				"the server's own egress (the proxy's upstream connections) is not restricted by the chart")
		})
	}
	t.Run("none by default", func(t *testing.T) {
		var sts appsv1.StatefulSet
		render(t).one(t, "StatefulSet", &sts)
		for _, v := range sts.Spec.Template.Spec.Volumes {
			require.NotEqual(t, "upstream-ca", v.Name)
		}
	})
}

func TestChartTemplateFull(t *testing.T) {
	objs := render(t, "-f", "testdata/full-values.yaml")
	var ns corev1.Namespace
	objs.one(t, "Namespace", &ns)
	require.Equal(t, "sandboxrun-sandboxes", ns.Name)
	require.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"])
	var role rbacv1.Role
	objs.in(t, "Role", "sandboxrun-sandboxes", &role)
	require.Contains(t, role.Rules[0].Verbs, "patch", "warm Pods are claimed with a patch")
	require.Empty(t, objs["ClusterRole"], "rbac.listNodes: false")
	require.Len(t, objs["Ingress"], 1)
	require.Len(t, objs["ServiceMonitor"], 1)
	var cm corev1.ConfigMap
	objs.one(t, "ConfigMap", &cm)
	require.Len(t, cm.Data, 3)
	pol, err := policy.ParsePolicy("p.yaml", []byte(cm.Data["rel-sandboxrun-2.yaml"]))
	require.NoError(t, err)
	require.Equal(t, "gvisor", pol.Kubernetes.RuntimeClass)
	require.Equal(t, 4, pol.Kubernetes.Warm)
	require.Equal(t, "sessions-rel-sandboxrun-2", pol.Kubernetes.Claims[1].Name)
	require.Equal(t, time.Hour, time.Duration(pol.Sessions.TTL.Value), "the user's sessions keys are kept beside the chart's")
	var sts appsv1.StatefulSet
	objs.one(t, "StatefulSet", &sts)
	require.Equal(t, "Delete", string(sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted))
	found := false
	for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "GITHUB_TOKEN" {
			found = true
			require.Empty(t, e.Value, "egress secrets come from a Secret, never inline")
			require.Equal(t, "sandboxrun-egress", e.ValueFrom.SecretKeyRef.Name)
		}
	}
	require.True(t, found)
}

func TestChartRefusesBadValues(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		says string
	}{
		"no tokens secret":  {[]string{"--set", "auth.existingSecret="}, "auth"},
		"an unknown key":    {[]string{"--set", "replica=2"}, "replica"},
		"a wrong type":      {[]string{"--set", "serve.port=http"}, "port"},
		"zero replicas":     {[]string{"--set", "replicas=0"}, "replicas"},
		"a relative path":   {[]string{"--set", "sessions.path=sessions"}, "path"},
		"a bad pull policy": {[]string{"--set", "image.pullPolicy=Sometimes"}, "pullPolicy"},
		"uploads on each replica's own disk": {[]string{"--set", "policy.skill_uploads.allow=tokens"},
			"policy.skill_uploads allows uploads with 2 replicas, and uploads.enabled is false"},
		"an uploads claim only one node mounts": {[]string{"--set", "uploads.enabled=true", "--set", "uploads.accessModes={ReadWriteOnce}"},
			"must be ReadWriteMany"},
		"an upstream CA given twice": {[]string{"--set", "egress.upstreamCA.configMap=a", "--set", "egress.upstreamCA.secret=b"},
			"give the PEM in one of them"},
		"an upstream CA file the server does not have": {[]string{"--set", "policy.egress.upstream_ca=/etc/ca.pem"},
			"egress.upstreamCA"},
		"an unknown upstream CA key": {[]string{"--set", "egress.upstreamCA.file=ca.pem"}, "file"},
		"a created uploads claim out of the sandboxes' namespace": {[]string{"--set", "uploads.enabled=true", "--set", "sandbox.namespace=sbx"},
			"uploads.existingClaim"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := helm(t, append([]string{"template", "rel", chartDir}, c.args...)...)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.says)
		})
	}
}

// TestChartFilesListed keeps the test values next to what the docs name.
func TestChartFilesListed(t *testing.T) {
	for _, f := range []string{"Chart.yaml", "values.yaml", "values.schema.json", "templates/tests/smoke.yaml"} {
		_, err := os.Stat(filepath.Join(chartDir, f))
		require.NoError(t, err)
	}
}
