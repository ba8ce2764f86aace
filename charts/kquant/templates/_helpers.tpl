{{/* Names. */}}
{{- define "kquant.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kquant.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kquant.manager.fullname" -}}{{ include "kquant.fullname" . }}-manager{{- end -}}
{{- define "kquant.agent.fullname" -}}{{ include "kquant.fullname" . }}-agent{{- end -}}
{{- define "kquant.run.fullname" -}}{{ include "kquant.fullname" . }}-run{{- end -}}

{{/* kquant.runPods: whether runs execute in run pods (gpuAllocation DevicePlugin or DRA). */}}
{{- define "kquant.runPods" -}}
{{- if ne .Values.gpuAllocation "None" }}true{{ end -}}
{{- end -}}

{{- define "kquant.manager.serviceAccountName" -}}
{{- if .Values.manager.serviceAccount.create -}}
{{- default (include "kquant.manager.fullname" .) .Values.manager.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.manager.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kquant.agent.serviceAccountName" -}}
{{- if .Values.agent.serviceAccount.create -}}
{{- default (include "kquant.agent.fullname" .) .Values.agent.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.agent.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels: common to every object; component ones add app.kubernetes.io/component. */}}
{{- define "kquant.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "kquant.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kquant
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "kquant.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kquant.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "kquant.componentLabels" -}}
{{ include "kquant.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* kquant.image: repository@digest when a digest is set, else repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "kquant.image" -}}
{{- if .digest -}}
{{- printf "%s@%s" .repository .digest -}}
{{- else -}}
{{- printf "%s:%s" .repository (default $.appVersion .tag) -}}
{{- end -}}
{{- end -}}

{{/*
kquant.generatedRBAC renders the RBAC that controller-gen generated from the
kubebuilder markers of a component (files/rbac/<component>_role.yaml, a copy of
config/rbac/<component>_role.yaml kept identical by test/chart): its ClusterRole
rules as a ClusterRole bound to the component's ServiceAccount, and each Role
(markers with a namespace) as a Role in the release namespace. The rules are
taken verbatim, so the chart grants exactly what the code declares it needs.
*/}}
{{- define "kquant.generatedRBAC" -}}
{{- $root := .root -}}
{{- $content := $root.Files.Get (printf "files/rbac/%s_role.yaml" .component) -}}
{{- if not $content -}}
{{- fail (printf "files/rbac/%s_role.yaml is missing: run `make chart-sync`" .component) -}}
{{- end -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" $content -1 }}
{{- $obj := fromYaml $doc -}}
{{- if and $obj (hasKey $obj "kind") }}
{{- $kind := $obj.kind -}}
{{- $bindingKind := ternary "ClusterRoleBinding" "RoleBinding" (eq $kind "ClusterRole") }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ $kind }}
metadata:
  name: {{ $.name }}
  {{- if eq $kind "Role" }}
  namespace: {{ $root.Release.Namespace }}
  {{- end }}
  labels:
    {{- include "kquant.componentLabels" (dict "root" $root "component" $.component) | nindent 4 }}
rules:
  {{- toYaml $obj.rules | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ $bindingKind }}
metadata:
  name: {{ $.name }}
  {{- if eq $kind "Role" }}
  namespace: {{ $root.Release.Namespace }}
  {{- end }}
  labels:
    {{- include "kquant.componentLabels" (dict "root" $root "component" $.component) | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: {{ $kind }}
  name: {{ $.name }}
subjects:
- kind: ServiceAccount
  name: {{ $.serviceAccount }}
  namespace: {{ $root.Release.Namespace }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
kquant.serviceMonitorEndpoint: the ServiceMonitor endpoint of a component's
metrics port, from its serviceMonitor values (sm) and whether it serves
HTTPS behind the API server's authentication (secure; the manager's
--metrics-secure, with a self-signed certificate, so the scraper presents
its service-account token and skips verification).
*/}}
{{- define "kquant.serviceMonitorEndpoint" -}}
{{- $sm := .sm -}}
- port: metrics
  path: /metrics
  interval: {{ $sm.interval }}
  scrapeTimeout: {{ $sm.scrapeTimeout }}
  honorLabels: {{ $sm.honorLabels | default false }}
  {{- if .secure }}
  scheme: https
  bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
  tlsConfig:
    insecureSkipVerify: true
  {{- end }}
  {{- with $sm.relabelings }}
  relabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $sm.metricRelabelings }}
  metricRelabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/*
kquant.admissionPolicy renders a ValidatingAdmissionPolicy and its binding from
files/policy/<file> (a copy of config/policy/<file>, kept identical by
test/chart), renamed <name> with the component's labels and the given
policy's failurePolicy and validationActions. matchConditions, when given,
replace the file's; each entry of variables gives the policy variable of that
name a new CEL expression. So the chart ships config/policy's rules verbatim
and only fills in what the release decides (names, the run image).
*/}}
{{- define "kquant.admissionPolicy" -}}
{{- $ctx := . -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" ($ctx.root.Files.Get (printf "files/policy/%s" $ctx.file)) -1 }}
{{- $obj := fromYaml $doc }}
{{- if eq (get $obj "kind") "ValidatingAdmissionPolicy" }}
{{- if $ctx.matchConditions }}
{{- $_ := set $obj.spec "matchConditions" $ctx.matchConditions }}
{{- end }}
{{- $vars := list }}
{{- range $v := (get $obj.spec "variables" | default list) }}
{{- if hasKey ($ctx.variables | default dict) $v.name }}
{{- $v = dict "name" $v.name "expression" (get $ctx.variables $v.name) }}
{{- end }}
{{- $vars = append $vars $v }}
{{- end }}
{{- if $vars }}
{{- $_ := set $obj.spec "variables" $vars }}
{{- end }}
{{- $_ := set $obj.spec "failurePolicy" $ctx.policy.failurePolicy }}
{{- else if eq (get $obj "kind") "ValidatingAdmissionPolicyBinding" }}
{{- $_ := set $obj.spec "policyName" $ctx.name }}
{{- $_ := set $obj.spec "validationActions" $ctx.policy.validationActions }}
{{- end }}
{{- if $obj.kind }}
{{- $_ := set $obj.metadata "name" $ctx.name }}
{{- $_ := set $obj.metadata "labels" (include "kquant.componentLabels" (dict "root" $ctx.root "component" $ctx.component) | fromYaml) }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- end -}}

{{/* kquant.manager.user is the manager's ServiceAccount as the API server names its requests. */}}
{{- define "kquant.manager.user" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "kquant.manager.serviceAccountName" . }}
{{- end -}}

{{/*
A toleration of every validation gate's taint, gate.kquant.dev/<family> of any
effect (the families of controllers/nodelabels; test/chart checks them against
gate.Tolerations). Pods that must outlive a gate carry it: the agent, which
must keep observing a gated node so that it can be re-validated, the manager,
which alone clears a gate, and the uninstall hook, which removes the taints.
*/}}
{{- define "kquant.gateTolerations" -}}
{{- range list "fp8" "fp8-block" "mxfp8" "nvfp4" }}
- {key: gate.kquant.dev/{{ . }}, operator: Exists}
{{- end }}
{{- end -}}
