{{- define "hse.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hse.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "hse.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hse.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: exporter
{{- end -}}

{{- /* Labels of every object except the component, which each object sets. */ -}}
{{- define "hse.baseLabels" -}}
app.kubernetes.io/name: {{ include "hse.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: hypha-serve-exporter
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "hse.labels" -}}
{{ include "hse.baseLabels" . }}
app.kubernetes.io/component: exporter
{{- end -}}

{{- define "hse.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "hse.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- /* registry/repository[:tag][@digest]; global.imageRegistry (umbrella charts) wins over image.registry,
the digest wins over the tag. */ -}}
{{- define "hse.image" -}}
{{- $registry := .Values.image.registry -}}
{{- with .Values.global }}{{ with .imageRegistry }}{{ $registry = . }}{{ end }}{{ end -}}
{{- $ref := .Values.image.repository -}}
{{- if $registry }}{{ $ref = printf "%s/%s" $registry $ref }}{{ end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $ref .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $ref (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{- /* image.pullSecrets and global.imagePullSecrets, as [{name: x}] (plain strings accepted). */ -}}
{{- define "hse.imagePullSecrets" -}}
{{- $secrets := list -}}
{{- $global := list -}}
{{- with .Values.global }}{{ $global = .imagePullSecrets | default list }}{{ end -}}
{{- range (concat $global .Values.imagePullSecrets) -}}
{{- if kindIs "string" . }}{{ $secrets = append $secrets (dict "name" .) }}{{ else }}{{ $secrets = append $secrets . }}{{ end -}}
{{- end -}}
{{- with $secrets }}
imagePullSecrets:
  {{- toYaml (uniq .) | nindent 2 }}
{{- end -}}
{{- end -}}

{{- /* The Prometheus Operator objects: "auto" renders them only when the API serves monitoring.coreos.com/v1
(`helm template` needs --api-versions monitoring.coreos.com/v1 to simulate it); true forces them. */ -}}
{{- define "hse.monitoringApi" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}true{{ end -}}
{{- end -}}

{{- define "hse.serviceMonitor.enabled" -}}
{{- $e := .Values.serviceMonitor.enabled -}}
{{- if or (eq (toString $e) "true") (and (eq (toString $e) "auto") (include "hse.monitoringApi" .)) }}true{{ end -}}
{{- end -}}

{{- define "hse.prometheusRule.enabled" -}}
{{- $e := .Values.prometheusRule.enabled -}}
{{- if or (eq (toString $e) "true") (and (eq (toString $e) "auto") (include "hse.monitoringApi" .)) }}true{{ end -}}
{{- end -}}

{{- /* The scrape job: a Service label that the ServiceMonitor's jobLabel names. One job per release, so shards are
separate jobs; by default it starts with "hypha-serve-exporter", which the rules select (hse.ruleJobSelector). */ -}}
{{- define "hse.jobName" -}}
{{- if .Values.serviceMonitor.jobName -}}
{{- .Values.serviceMonitor.jobName -}}
{{- else -}}
{{- $full := include "hse.fullname" . -}}
{{- if hasPrefix "hypha-serve-exporter" $full -}}
{{- $full -}}
{{- else -}}
{{- printf "hypha-serve-exporter-%s" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* OpenShift's restricted-v2 SCC assigns the uid, gid and fsGroup from the namespace's range and refuses fixed
ones: "auto" drops them when the API serves security.openshift.io/v1, "force" always, "disabled" never. */ -}}
{{- define "hse.openshift" -}}
{{- $mode := .Values.openshift.adaptSecurityContext -}}
{{- if or (eq $mode "force") (and (eq $mode "auto") (.Capabilities.APIVersions.Has "security.openshift.io/v1")) }}true{{ end -}}
{{- end -}}

{{- define "hse.podSecurityContext" -}}
{{- $ctx := dict -}}
{{- range $k, $v := .Values.podSecurityContext }}{{ if not (kindIs "invalid" $v) }}{{ $_ := set $ctx $k $v }}{{ end }}{{ end -}}
{{- if include "hse.openshift" . }}{{ $ctx = omit $ctx "runAsUser" "runAsGroup" "fsGroup" "seLinuxOptions" }}{{ end -}}
{{- toYaml $ctx -}}
{{- end -}}

{{- define "hse.containerSecurityContext" -}}
{{- $ctx := dict -}}
{{- range $k, $v := .Values.securityContext }}{{ if not (kindIs "invalid" $v) }}{{ $_ := set $ctx $k $v }}{{ end }}{{ end -}}
{{- if include "hse.openshift" . }}{{ $ctx = omit $ctx "runAsUser" "runAsGroup" "seLinuxOptions" }}{{ end -}}
{{- toYaml $ctx -}}
{{- end -}}

{{- /* Token files under /run/secrets/hypha-serve-exporter/: the two named slots and any further ones. */ -}}
{{- define "hse.tokenSources" -}}
{{- $sources := list -}}
{{- with .Values.secrets.hypha }}{{ if .existingSecret }}{{ $sources = append $sources (dict "secret" .existingSecret "key" .key "path" "hypha-token") }}{{ end }}{{ end -}}
{{- with .Values.secrets.ray }}{{ if .existingSecret }}{{ $sources = append $sources (dict "secret" .existingSecret "key" .key "path" "ray-token") }}{{ end }}{{ end -}}
{{- range .Values.secrets.additional }}{{ $sources = append $sources (dict "secret" .existingSecret "key" .key "path" .path) }}{{ end -}}
{{- toJson $sources -}}
{{- end -}}

{{- /* files/ holds real copies of the generated rules and dashboards (scripts/check-deploy.sh --sync). A chart
that lost them (a packaging step that drops files) must not render an empty PrometheusRule silently. */ -}}
{{- define "hse.checkFiles" -}}
{{- if not (.Files.Get "files/prometheusrule.yaml") -}}
{{- fail "hypha-serve-exporter chart: files/prometheusrule.yaml is missing or empty; the chart was copied or packaged without its files/ directory (the generated PrometheusRule and the Grafana dashboards). Use the packaged chart, or restore files/ from the repository (bash scripts/check-deploy.sh --sync)." -}}
{{- end -}}
{{- if not (.Files.Glob "files/dashboards/*.json") -}}
{{- fail "hypha-serve-exporter chart: files/dashboards/*.json is missing; the chart was copied or packaged without its files/ directory (the generated PrometheusRule and the Grafana dashboards). Use the packaged chart, or restore files/ from the repository (bash scripts/check-deploy.sh --sync)." -}}
{{- end -}}
{{- end -}}

{{- /* The job the ServiceMonitor gives the targets: the value of the Service label its jobLabel names (the
operator falls back to the Service name when the label is missing). */ -}}
{{- define "hse.scrapeJob" -}}
{{- $jobLabel := .Values.serviceMonitor.jobLabel | default "hypha-serve-exporter/job" -}}
{{- $labels := include "hse.labels" . | fromYaml -}}
{{- $_ := set $labels "hypha-serve-exporter/job" (include "hse.jobName" .) -}}
{{- $labels = merge (dict) (.Values.service.labels | default dict) $labels -}}
{{- index $labels $jobLabel | default (include "hse.fullname" .) -}}
{{- end -}}

{{- /* The exporter selector of the generated rules (rules/config/mixin.yml exporter_selector), in every expression. */ -}}
{{- define "hse.defaultJobSelector" -}}
job=~"hypha-serve-exporter.*"
{{- end -}}

{{- /* The rules' exporter selector: prometheusRule.jobSelector, else the generated one while it matches the scrape job
(every shard's default job starts with hypha-serve-exporter, so one set of rules covers them all), else that job. */ -}}
{{- define "hse.ruleJobSelector" -}}
{{- $job := include "hse.scrapeJob" . -}}
{{- if .Values.prometheusRule.jobSelector -}}
{{- .Values.prometheusRule.jobSelector -}}
{{- else if regexMatch "^hypha-serve-exporter.*$" $job -}}
{{- include "hse.defaultJobSelector" . -}}
{{- else -}}
{{- printf "job=%q" $job -}}
{{- end -}}
{{- end -}}

{{- /* What prometheusRule.runbookUrl replaces at the start of every runbook_url (rules/config/mixin.yml runbook_url_template). */ -}}
{{- define "hse.runbookBase" -}}
https://github.com/aicell-lab/hypha-serve-exporter/blob/main/docs/runbooks
{{- end -}}
