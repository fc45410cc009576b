//go:build helm

package helm

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The upstream of the egress check: an HTTPS echo server in a namespace of
// its own on the podnet test cluster, behind a Service, so that the
// cluster's DNS names it. testdata/podnet-egress-values.yaml allows this
// name to the skill egressSkill and sends the secret there.
const (
	upstreamNS   = "sbx-helm-upstream"
	upstreamHost = "echo." + upstreamNS + ".svc.cluster.local"
	egressSkill  = "egress-echo"
	// refusedHost is outside every allowlist: the proxy refuses it before
	// resolving it, so nothing is sent there.
	refusedHost = "kubernetes.default.svc.cluster.local"
)

// upstreamCert is a self-signed certificate for upstreamHost and its key,
// PEM: the server's CA (egress.upstreamCA) is the certificate itself.
func upstreamCert(t *testing.T) (certPEM, keyPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: upstreamHost},
		DNSNames:              []string{upstreamHost},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(2 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// prepareEgress makes what the egress values name before the install: the
// upstream's CA in the ConfigMap sbx-upstream-ca and the secret's value in
// the Secret sbx-upstream-token (both in the release's namespace), and the
// skill egressSkill in the skills claim's folder.
func (c *cluster) prepareEgress(caPEM []byte, secret string) {
	t := c.t
	c.kubectl("-n", namespace, "create", "configmap", "sbx-upstream-ca", "--from-literal=ca.pem="+string(caPEM))
	c.kubectl("-n", namespace, "create", "secret", "generic", "sbx-upstream-token", "--from-literal=token="+secret)
	dir := filepath.Join(c.run, "helm-test", "skills", egressSkill)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(`---
name: `+egressSkill+`
description: Calls the test cluster's echo upstream with its API token. Used by the podnet chart test.
metadata:
  network_access: "true"
  allowed_domains: "`+upstreamHost+`"
  secrets: "API_TOKEN"
---
Run scripts/call.py with a name for the request's path.
`), 0o644))
	// The request to the upstream carries the token; the one to
	// refusedHost must be refused by the run's proxy.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "call.py"), []byte(`import json, os, sys, urllib.request
tok = os.environ.get("API_TOKEN", "")
req = urllib.request.Request("https://`+upstreamHost+`/v1/me/" + sys.argv[1], headers={"Authorization": "Bearer " + tok})
with urllib.request.urlopen(req, timeout=20) as r:
    body = r.read().decode()
try:
    urllib.request.urlopen("https://`+refusedHost+`/", timeout=20)
    refused = ""
except Exception as e:
    refused = str(e)
print(json.dumps({"token": tok, "body": body, "refused": refused}))
`), 0o644))
}

// echoServer answers every GET with the Authorization header it got, and
// prints it (the test reads the Pod's log). A connection that brings no
// TLS (the kubelet's TCP probe) is dropped quietly.
const echoServer = `import http.server, ssl
class Echo(http.server.BaseHTTPRequestHandler):
    def setup(self):
        self.request.do_handshake()
        super().setup()
    def do_GET(self):
        auth = self.headers.get("Authorization", "")
        print("seen %s %s auth=%s" % (self.command, self.path, auth), flush=True)
        body = ("auth=" + auth).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, address):
        pass
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("/tls/cert.pem", "/tls/key.pem")
srv = Server(("0.0.0.0", 8443), Echo)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
print("listening", flush=True)
srv.serve_forever()
`

// startUpstream runs echoServer in image (the runner image, which the
// cluster has loaded and which has python3) in upstreamNS, with the
// certificate from a Secret and a Service on port 443, and waits until it
// is Ready.
func (c *cluster) startUpstream(image string, certPEM, keyPEM []byte) {
	t := c.t
	c.kubectl("create", "namespace", upstreamNS)
	c.kubectl("label", "namespace", upstreamNS, "pod-security.kubernetes.io/enforce=restricted")
	labels := map[string]string{"app": "sbx-helm-upstream"}
	list := map[string]any{
		"apiVersion": "v1", "kind": "List",
		"items": []any{
			map[string]any{
				"apiVersion": "v1", "kind": "Secret",
				"metadata":   map[string]any{"name": "echo-tls", "namespace": upstreamNS},
				"stringData": map[string]string{"cert.pem": string(certPEM), "key.pem": string(keyPEM)},
			},
			map[string]any{
				"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": "echo", "namespace": upstreamNS, "labels": labels},
				"spec": map[string]any{
					"automountServiceAccountToken": false,
					"enableServiceLinks":           false,
					"securityContext": map[string]any{"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
						"seccompProfile": map[string]string{"type": "RuntimeDefault"}},
					"containers": []any{map[string]any{
						"name": "echo", "image": image, "imagePullPolicy": "Never",
						"command":        []string{"python3", "-c", echoServer},
						"ports":          []any{map[string]any{"containerPort": 8443}},
						"readinessProbe": map[string]any{"tcpSocket": map[string]any{"port": 8443}, "periodSeconds": 1},
						"securityContext": map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
							"capabilities": map[string]any{"drop": []string{"ALL"}}},
						"volumeMounts": []any{map[string]any{"name": "tls", "mountPath": "/tls", "readOnly": true}},
						"resources":    map[string]any{"requests": map[string]string{"cpu": "10m", "memory": "32Mi"}, "limits": map[string]string{"memory": "64Mi"}},
					}},
					"volumes": []any{map[string]any{"name": "tls", "secret": map[string]any{"secretName": "echo-tls"}}},
				},
			},
			map[string]any{
				"apiVersion": "v1", "kind": "Service",
				"metadata": map[string]any{"name": "echo", "namespace": upstreamNS},
				"spec": map[string]any{"selector": labels,
					"ports": []any{map[string]any{"port": 443, "targetPort": 8443}}},
			},
		},
	}
	manifest, err := json.Marshal(list)
	require.NoError(t, err)
	c.apply(string(manifest))
	c.kubectl("-n", upstreamNS, "wait", "--for=condition=Ready", "pod/echo", "--timeout=2m")
}

// upstreamSaw is what the upstream printed about the requests it got.
func (c *cluster) upstreamSaw() string {
	var seen []string
	for _, line := range strings.Split(c.kubectl("-n", upstreamNS, "logs", "echo"), "\n") {
		if strings.HasPrefix(line, "seen ") {
			seen = append(seen, line)
		}
	}
	return strings.Join(seen, "\n")
}
