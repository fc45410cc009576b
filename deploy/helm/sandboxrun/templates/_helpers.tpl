{{/* The release's name for its objects, at most 63 characters. */}}
{{- define "sandboxrun.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sandboxrun.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sandboxrun.labels" -}}
{{ include "sandboxrun.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Where sandbox Pods run: sandbox.namespace, else the release's. */}}
{{- define "sandboxrun.sandboxNamespace" -}}
{{- default .Release.Namespace .Values.sandbox.namespace -}}
{{- end -}}

{{/* True when sandbox Pods run in a namespace of their own. */}}
{{- define "sandboxrun.separateSandbox" -}}
{{- if ne (include "sandboxrun.sandboxNamespace" .) .Release.Namespace -}}true{{- end -}}
{{- end -}}

{{- define "sandboxrun.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sandboxrun.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "sandboxrun.headless" -}}
{{- printf "%s-headless" (include "sandboxrun.fullname" .) -}}
{{- end -}}

{{- define "sandboxrun.peerURL" -}}
{{- if .Values.routing.peerURL -}}
{{- .Values.routing.peerURL -}}
{{- else -}}
{{- printf "http://{replica}.%s.%s.svc.%s:%v" (include "sandboxrun.headless" .) .Release.Namespace .Values.routing.clusterDomain .Values.serve.port -}}
{{- end -}}
{{- end -}}

{{- define "sandboxrun.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "sandboxrun.runnerImage" -}}
{{- default (printf "sandboxrun/runner:%s" .Chart.AppVersion) .Values.runnerImage -}}
{{- end -}}

{{/*
The operator policy of one replica (its ordinal in .ordinal): the user's
policy with the backend's keys set by the chart. Writable sessions (the
default) reach a run's Pod over its attach stream and need no claim;
read-only ones (policy.sessions.write: false) are mounted into the Pod from
the replica's own claim, so then the replicas' files differ in the claim
they name.
*/}}
{{- define "sandboxrun.policy" -}}
{{- $v := .root.Values -}}
{{- $pol := deepCopy (default dict $v.policy) -}}
{{- $claims := list -}}
{{- if not $v.skills.send -}}
{{- $claims = append $claims (dict "name" $v.skills.existingClaim "path" $v.skills.path) -}}
{{- end -}}
{{- if $v.sessions.enabled -}}
{{- $sessions := merge (dict "root" (printf "%s/sessions" $v.sessions.path)) (omit (default dict $pol.sessions) "root") -}}
{{- if and (hasKey $sessions "write") (not $sessions.write) -}}
{{- $claim := printf "sessions-%s-%d" (include "sandboxrun.fullname" .root) .ordinal -}}
{{- $claims = append $claims (dict "name" $claim "path" $v.sessions.path) -}}
{{- end -}}
{{- $_ := set $pol "sessions" $sessions -}}
{{- end -}}
{{- if $v.uploads.enabled -}}
{{- $claims = append $claims (dict "name" (include "sandboxrun.uploadsClaim" .root) "path" $v.uploads.path) -}}
{{- $up := merge (dict "store" $v.uploads.path) (omit (default dict $pol.skill_uploads) "store") -}}
{{- if not (hasKey $up "allow") }}{{ $_ := set $up "allow" "tokens" }}{{ end -}}
{{- $_ := set $pol "skill_uploads" $up -}}
{{- end -}}
{{- $kube := dict "namespace" (include "sandboxrun.sandboxNamespace" .root) "claims" $claims "host_paths" false -}}
{{- if $v.skills.send -}}
{{- $_ := set $kube "skills" "send" -}}
{{- $_ := set $kube "skill_send_max" $v.skills.sendMax -}}
{{- $_ := set $kube "skill_send_guard" $v.skills.sendGuard -}}
{{- end -}}
{{- with $v.sandbox.runtimeClass }}{{ $_ := set $kube "runtime_class" . }}{{ end -}}
{{- with $v.sandbox.imagePullPolicy }}{{ $_ := set $kube "image_pull_policy" . }}{{ end -}}
{{- if $v.sandbox.warm }}{{ $_ := set $kube "warm" $v.sandbox.warm }}{{ $_ := set $kube "warm_idle" $v.sandbox.warmIdle }}{{ end -}}
{{- /* The isolation probe's targets: the operator's, and this replica's
own name and port (its Pod address; with hostNetwork that is the node's,
which a NetworkPolicy may not filter). */ -}}
{{- $iso := default dict $v.sandbox.isolation -}}
{{- $targets := concat (list) (default (list) $iso.targets) -}}
{{- if and $iso.selfTarget (not $v.hostNetwork) -}}
{{- $targets = append $targets (printf "%s-%d.%s.%s.svc.%s:%v" (include "sandboxrun.fullname" .root) .ordinal (include "sandboxrun.headless" .root) .root.Release.Namespace $v.routing.clusterDomain $v.serve.port) -}}
{{- end -}}
{{- with $targets }}{{ $_ := set $kube "isolation_targets" . }}{{ end -}}
{{- with $iso.recheck }}{{ $_ := set $kube "isolation_recheck" . }}{{ end -}}
{{- if not $iso.clusterDNS }}{{ $_ := set $kube "isolation_cluster_dns" false }}{{ end -}}
{{- if not $iso.apiServer }}{{ $_ := set $kube "isolation_api_server" false }}{{ end -}}
{{- if include "sandboxrun.upstreamCA" .root -}}
{{- $eg := default dict $pol.egress -}}
{{- $_ := set $eg "upstream_ca" (printf "%s/ca.pem" (include "sandboxrun.upstreamCADir" .root)) -}}
{{- $_ := set $pol "egress" $eg -}}
{{- end -}}
{{- $_ := set $pol "backend" "kubernetes" -}}
{{- $_ := set $pol "kubernetes" $kube -}}
{{- toYaml $pol -}}
{{- end -}}


{{/* The claim that holds the uploaded skills. */}}
{{- define "sandboxrun.uploadsClaim" -}}
{{- default (printf "%s-uploads" (include "sandboxrun.fullname" .)) .Values.uploads.existingClaim -}}
{{- end -}}

{{/*
Refuses upload settings that would keep an upload on one replica, or out
of the sandbox Pods' reach: uploads allowed by the policy with several
replicas and no shared claim; a created claim that is not ReadWriteMany
with several replicas; a created claim with sandbox Pods in another
namespace (a claim lives in one namespace).
*/}}
{{- define "sandboxrun.checkUploads" -}}
{{- $v := .Values -}}
{{- $allowed := eq (toString (dig "skill_uploads" "allow" "" (default dict $v.policy))) "tokens" -}}
{{- if and $allowed (not $v.uploads.enabled) (gt (int $v.replicas) 1) -}}
{{- fail (printf "policy.skill_uploads allows uploads with %d replicas, and uploads.enabled is false: each replica would keep the uploads it took (a run through another answers 404). Set uploads.enabled=true with a ReadWriteMany claim (uploads.existingClaim, or uploads.storageClass of a class that offers ReadWriteMany), or replicas=1 (docs/deploy.md, \"Uploads on every replica\")" (int $v.replicas)) -}}
{{- end -}}
{{- if and $v.uploads.enabled (not $v.uploads.existingClaim) -}}
{{- if and (gt (int $v.replicas) 1) (not (has "ReadWriteMany" $v.uploads.accessModes)) -}}
{{- fail (printf "uploads.accessModes %v with %d replicas: every replica mounts the uploads claim read-write, so it must be ReadWriteMany (NFS, CephFS, EFS, Filestore…); or give uploads.existingClaim" $v.uploads.accessModes (int $v.replicas)) -}}
{{- end -}}
{{- if include "sandboxrun.separateSandbox" . -}}
{{- fail (printf "uploads: sandbox Pods run in namespace %s and a claim the chart creates lives in %s alone: make a ReadWriteMany claim bound to the same volume in both namespaces and name it in uploads.existingClaim" (include "sandboxrun.sandboxNamespace" .) .Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Where the server mounts egress.upstreamCA's PEM (as ca.pem). */}}
{{- define "sandboxrun.upstreamCADir" -}}/etc/sandboxrun/upstream-ca{{- end -}}

{{/* True when egress.upstreamCA names a ConfigMap or a Secret. */}}
{{- define "sandboxrun.upstreamCA" -}}
{{- $ca := default dict (default dict .Values.egress).upstreamCA -}}
{{- if or $ca.configMap $ca.secret }}true{{ end -}}
{{- end -}}

{{/*
Refuses an upstream CA given twice (a ConfigMap and a Secret), and a
policy egress.upstream_ca without egress.upstreamCA: that names a file in
the server's container, where nothing of the operator's is but what the
chart mounts.
*/}}
{{- define "sandboxrun.checkEgress" -}}
{{- $ca := default dict (default dict .Values.egress).upstreamCA -}}
{{- if and $ca.configMap $ca.secret -}}
{{- fail (printf "egress.upstreamCA names both configMap %s and secret %s: give the PEM in one of them" $ca.configMap $ca.secret) -}}
{{- end -}}
{{- if and (dig "egress" "upstream_ca" "" (default dict .Values.policy)) (not (include "sandboxrun.upstreamCA" .)) -}}
{{- fail "policy.egress.upstream_ca names a file in the server's container, which holds none of yours: put the PEM in a ConfigMap or Secret and name it in egress.upstreamCA {configMap or secret, key}; the chart mounts it and sets egress.upstream_ca (docs/deploy.md, \"Egress and secrets\")" -}}
{{- end -}}
{{- end -}}
