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
{{- $claims := list (dict "name" $v.skills.existingClaim "path" $v.skills.path) -}}
{{- if $v.sessions.enabled -}}
{{- $sessions := merge (dict "root" (printf "%s/sessions" $v.sessions.path)) (omit (default dict $pol.sessions) "root") -}}
{{- if and (hasKey $sessions "write") (not $sessions.write) -}}
{{- $claim := printf "sessions-%s-%d" (include "sandboxrun.fullname" .root) .ordinal -}}
{{- $claims = append $claims (dict "name" $claim "path" $v.sessions.path) -}}
{{- end -}}
{{- $_ := set $pol "sessions" $sessions -}}
{{- end -}}
{{- $kube := dict "namespace" (include "sandboxrun.sandboxNamespace" .root) "claims" $claims "host_paths" false -}}
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
{{- $_ := set $pol "backend" "kubernetes" -}}
{{- $_ := set $pol "kubernetes" $kube -}}
{{- toYaml $pol -}}
{{- end -}}
