{{/*
Names. The full name is cut at 52 characters: a StatefulSet's pods get the label
controller-revision-hash=<name>-<10 characters>, which must fit in 63. Names with a suffix
(suffixedName) are cut to fit in 63 too.
*/}}
{{- define "fraud-detector.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 52 | trimSuffix "-" }}
{{- end }}

{{- define "fraud-detector.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "fraud-detector.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name plus "-<suffix>", within 63 characters. Called with (dict "ctx" $ "suffix" s). */}}
{{- define "fraud-detector.suffixedName" -}}
{{- $max := int (sub 62 (len .suffix)) }}
{{- printf "%s-%s" (include "fraud-detector.fullname" .ctx | trunc $max | trimSuffix "-") .suffix }}
{{- end }}

{{- define "fraud-detector.headlessServiceName" -}}
{{- include "fraud-detector.suffixedName" (dict "ctx" . "suffix" "headless") }}
{{- end }}

{{- define "fraud-detector.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "fraud-detector.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Labels. Called with (dict "ctx" $ "component" "detector"|"loadgen"|"test"): the component is
part of the selector so the Services never select load-generator or test pods.
*/}}
{{- define "fraud-detector.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fraud-detector.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "fraud-detector.labels" -}}
helm.sh/chart: {{ include "fraud-detector.chart" .ctx }}
{{ include "fraud-detector.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: fraud-detector
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "fraud-detector.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/*
A value as a string for an env variable or an argument. YAML numbers reach templates as
float64, which print as 1.2e+07: whole numbers are printed as integers.
*/}}
{{- define "fraud-detector.scalar" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) }}
{{- int64 . }}
{{- else }}
{{- toString . }}
{{- end }}
{{- end }}

{{/* Where each pod keeps its RocksDB state (FRAUD_STATE_DIR). */}}
{{- define "fraud-detector.stateDir" -}}
/var/lib/fraud-detector
{{- end }}

{{- define "fraud-detector.httpScheme" -}}
{{- if .Values.secrets.tls.existingSecret }}https{{ else }}http{{ end }}
{{- end }}

{{/* Owner URL for redirects: {member} is the owner's instance id, i.e. its pod name. */}}
{{- define "fraud-detector.peerUrlTemplate" -}}
{{- printf "%s://{member}.%s.%s.svc.%s:%d" (include "fraud-detector.httpScheme" .) (include "fraud-detector.headlessServiceName" .) .Release.Namespace .Values.clusterDomain (int .Values.http.port) }}
{{- end }}

{{/* KEDA owns the replica count only when it is enabled and its API is served. */}}
{{- define "fraud-detector.kedaActive" -}}
{{- if and .Values.keda.enabled (.Capabilities.APIVersions.Has "keda.sh/v1alpha1") }}true{{ end }}
{{- end }}

{{- define "fraud-detector.monitoringApi" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}true{{ end }}
{{- end }}

{{/*
The mounted Secrets, one entry each: volume name, Secret, mount path, the keys to project
(none: the whole Secret), the FRAUD_* variables that point at the files, and whether the
load generator needs it. Templates read this with fromYaml; it is the only place that knows
where a secret lives in the container.
*/}}
{{- define "fraud-detector.secretMounts" -}}
{{- $s := .Values.secrets -}}
mounts:
  - name: card-hash-key
    secretName: {{ $s.cardHashKey.existingSecret | quote }}
    mountPath: /etc/fraud-detector/card-hash-key
    items:
      - key: {{ $s.cardHashKey.key | quote }}
        path: card-hash-key
    env:
      FRAUD_CARD_HASH_KEY_FILE: /etc/fraud-detector/card-hash-key/card-hash-key
    loadgen: true
{{- if $s.apiToken.existingSecret }}
  - name: api-token
    secretName: {{ $s.apiToken.existingSecret | quote }}
    mountPath: /etc/fraud-detector/api-token
    items:
      - key: {{ $s.apiToken.key | quote }}
        path: token
    env:
      FRAUD_API_TOKEN_FILE: /etc/fraud-detector/api-token/token
    loadgen: false
{{- end }}
{{- if $s.tls.existingSecret }}
  - name: tls
    secretName: {{ $s.tls.existingSecret | quote }}
    mountPath: /etc/fraud-detector/tls
    items:
      - key: {{ $s.tls.certKey | quote }}
        path: tls.crt
      - key: {{ $s.tls.keyKey | quote }}
        path: tls.key
    env:
      FRAUD_TLS_CERT_FILE: /etc/fraud-detector/tls/tls.crt
      FRAUD_TLS_KEY_FILE: /etc/fraud-detector/tls/tls.key
    loadgen: false
{{- end }}
{{- if $s.kafka.existingSecret }}
  - name: kafka-client
    secretName: {{ $s.kafka.existingSecret | quote }}
    mountPath: /etc/fraud-detector/kafka
    items: []
    env:
      FRAUD_KAFKA_CONFIG: {{ printf "/etc/fraud-detector/kafka/%s" $s.kafka.configKey | quote }}
    loadgen: true
{{- end }}
{{- end }}

{{/* Secret volumes; called with (dict "ctx" $ "loadgen" bool). */}}
{{- define "fraud-detector.secretVolumes" -}}
{{- range (include "fraud-detector.secretMounts" .ctx | fromYaml).mounts }}
{{- if or (not $.loadgen) .loadgen }}
- name: {{ .name }}
  secret:
    secretName: {{ .secretName }}
    defaultMode: 0440
    {{- with .items }}
    items:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Read-only mounts of those volumes; same argument as secretVolumes. */}}
{{- define "fraud-detector.secretVolumeMounts" -}}
{{- range (include "fraud-detector.secretMounts" .ctx | fromYaml).mounts }}
{{- if or (not $.loadgen) .loadgen }}
- name: {{ .name }}
  mountPath: {{ .mountPath }}
  readOnly: true
{{- end }}
{{- end }}
{{- end }}

{{/*
A probe from .Values.probes.<kind>: an httpGet probe gets the http port and the scheme
(https when secrets.tls is set) unless it names its own. Called with (dict "ctx" $ "probe" p).
*/}}
{{- define "fraud-detector.probe" -}}
{{- $probe := deepCopy .probe }}
{{- with $probe.httpGet }}
{{- $_ := set . "port" (default "http" .port) }}
{{- $_ := set . "scheme" (default (include "fraud-detector.httpScheme" $.ctx | upper) .scheme) }}
{{- end }}
{{- toYaml $probe }}
{{- end }}

{{/* kafka.properties as `--kafka KEY=VALUE` arguments, for both binaries. */}}
{{- define "fraud-detector.kafkaPropertyArgs" -}}
{{- range $key, $value := .Values.kafka.properties }}
- --kafka
- {{ printf "%s=%s" $key (include "fraud-detector.scalar" $value) | quote }}
{{- end }}
{{- end }}

{{/* Pod-level settings shared by the detector and the load generator. */}}
{{- define "fraud-detector.podCommon" -}}
serviceAccountName: {{ include "fraud-detector.serviceAccountName" . }}
automountServiceAccountToken: false
enableServiceLinks: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
Refuses value combinations that the schema cannot express. Rendered from the StatefulSet,
which every release has.
*/}}
{{- define "fraud-detector.validate" -}}
{{- $partitions := int .Values.kafka.inputPartitions }}
{{- if gt (int .Values.replicaCount) $partitions }}
{{- fail (printf "replicaCount (%d) exceeds kafka.inputPartitions (%d): Kafka gives each partition of the input topic to one member of the consumer group, so pods beyond the partition count would own no partition and no state. Add partitions to the topic first, then raise kafka.inputPartitions." (int .Values.replicaCount) $partitions) }}
{{- end }}
{{- if .Values.keda.enabled }}
{{- if gt (int .Values.keda.maxReplicas) $partitions }}
{{- fail (printf "keda.maxReplicas (%d) exceeds kafka.inputPartitions (%d): pods beyond the partition count would own no partition." (int .Values.keda.maxReplicas) $partitions) }}
{{- end }}
{{- if gt (int .Values.keda.minReplicas) (int .Values.keda.maxReplicas) }}
{{- fail (printf "keda.minReplicas (%d) exceeds keda.maxReplicas (%d)." (int .Values.keda.minReplicas) (int .Values.keda.maxReplicas)) }}
{{- end }}
{{- end }}
{{- if le (mul (int .Values.terminationGracePeriodSeconds) 1000) (int .Values.config.shutdownTimeoutMs) }}
{{- fail (printf "terminationGracePeriodSeconds (%d s) must exceed config.shutdownTimeoutMs (%d ms), or the kubelet kills pods before they commit and close." (int .Values.terminationGracePeriodSeconds) (int .Values.config.shutdownTimeoutMs)) }}
{{- end }}
{{- if and .Values.loadgen.enabled (lt (int .Values.loadgen.rate) (int .Values.loadgen.parallelism)) }}
{{- fail (printf "loadgen.rate (%d) is below loadgen.parallelism (%d): each pod needs at least 1 record per second." (int .Values.loadgen.rate) (int .Values.loadgen.parallelism)) }}
{{- end }}
{{- end }}
