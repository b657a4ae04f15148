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

{{/*
The Secret holding the API's certificate and key: secrets.tls.existingSecret, or the one
cert-manager fills for certManager; empty without TLS.
*/}}
{{- define "fraud-detector.tlsSecretName" -}}
{{- if .Values.certManager.enabled }}
{{- include "fraud-detector.suffixedName" (dict "ctx" . "suffix" "tls") }}
{{- else }}
{{- .Values.secrets.tls.existingSecret }}
{{- end }}
{{- end }}

{{/* Scheme of the API port. */}}
{{- define "fraud-detector.httpScheme" -}}
{{- if include "fraud-detector.tlsSecretName" . }}https{{ else }}http{{ end }}
{{- end }}

{{/* Scheme of the probe port, lower case. */}}
{{- define "fraud-detector.probeScheme" -}}
{{- .Values.probe.scheme | lower }}
{{- end }}

{{/* The topic the load generator writes. */}}
{{- define "fraud-detector.loadgenTopic" -}}
{{- default .Values.kafka.inputTopic .Values.loadgen.topic }}
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
{{- with include "fraud-detector.tlsSecretName" . }}
  - name: tls
    secretName: {{ . | quote }}
    mountPath: /etc/fraud-detector/tls
    items:
      - key: {{ ternary "tls.crt" $s.tls.certKey $.Values.certManager.enabled | quote }}
        path: tls.crt
      - key: {{ ternary "tls.key" $s.tls.keyKey $.Values.certManager.enabled | quote }}
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
A probe from .Values.probes.<kind>: an httpGet probe gets the probe port and probe.scheme
unless it names its own. Called with (dict "ctx" $ "probe" p).
*/}}
{{- define "fraud-detector.probe" -}}
{{- $probe := deepCopy .probe }}
{{- with $probe.httpGet }}
{{- $_ := set . "port" (default "probe" .port) }}
{{- $_ := set . "scheme" (default $.ctx.Values.probe.scheme .scheme) }}
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
{{- if and .Values.loadgen.enabled (eq (include "fraud-detector.loadgenTopic" .) .Values.kafka.inputTopic) (not .Values.loadgen.allowInputTopic) }}
{{- fail (printf "loadgen.enabled would write synthetic transactions into kafka.inputTopic %q, the topic this release's detectors consume (in production: real card traffic, and alerts that reach real people). Set loadgen.topic to a test topic, or set loadgen.allowInputTopic=true if this release's input topic is a test topic." .Values.kafka.inputTopic) }}
{{- end }}
{{- if and .Values.api.auth.required (not .Values.secrets.apiToken.existingSecret) }}
{{- fail "api.auth.required is true but secrets.apiToken.existingSecret is empty: /v1/* would serve card state to anyone who reaches the pods. Create a token Secret (kubectl create secret generic fraud-detector-api-token --from-literal=token=$(openssl rand -hex 32)) and set secrets.apiToken.existingSecret to its name, or set api.auth.required=false to run without a token on purpose." }}
{{- end }}
{{- if .Values.certManager.enabled }}
{{- if .Values.secrets.tls.existingSecret }}
{{- fail (printf "certManager.enabled and secrets.tls.existingSecret (%q) both give the API's certificate: choose one." .Values.secrets.tls.existingSecret) }}
{{- end }}
{{- if not .Values.certManager.issuerRef.name }}
{{- fail "certManager.enabled needs certManager.issuerRef.name: the Issuer or ClusterIssuer that signs the API's certificate." }}
{{- end }}
{{- if not (.Capabilities.APIVersions.Has "cert-manager.io/v1") }}
{{- fail "certManager.enabled needs the cert-manager.io/v1 API, which the cluster does not serve: install cert-manager first (for helm template, pass --api-versions cert-manager.io/v1), or give an existing Secret in secrets.tls.existingSecret." }}
{{- end }}
{{- end }}
{{- end }}
