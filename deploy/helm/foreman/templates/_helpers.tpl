{{/* Names. */}}
{{- define "foreman.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "foreman.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one role: (dict "root" $ "role" "backend"). */}}
{{- define "foreman.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .role }}
{{- end -}}

{{- define "foreman.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "foreman.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "foreman.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{- define "foreman.scheme" -}}
{{- if .Values.tls.enabled }}HTTPS{{ else }}HTTP{{ end -}}
{{- end -}}

{{/* The seeds: every backend pod's stable DNS name and port. */}}
{{- define "foreman.seeds" -}}
{{- $full := include "foreman.fullname" . -}}
{{- $seeds := list -}}
{{- range $i := until (int .Values.backend.replicas) -}}
{{- $seeds = append $seeds (printf "%s-backend-%d.%s-backend.%s.svc.%s:%d" $full $i $full $.Release.Namespace $.Values.clusterDomain (int $.Values.backend.port)) -}}
{{- end -}}
{{- join "," $seeds -}}
{{- end -}}

{{/* Checks the values every install needs. */}}
{{- define "foreman.validate" -}}
{{- if not .Values.journal.existingSecret -}}
{{- fail "journal.existingSecret: name the Secret whose key (journal.secretKey, default url) holds the PostgreSQL URL postgres://user:password@host:5432/db; every backend shares that journal" -}}
{{- end -}}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) -}}
{{- fail "tls.secretName: name the Secret with tls.crt, tls.key and ca.crt (or set tls.enabled=false)" -}}
{{- end -}}
{{- if and (not .Values.tls.enabled) (not .Values.insecure) -}}
{{- fail "nodes bind their pod IP, which needs TLS: set tls.enabled=true with tls.secretName, or insecure=true on a network you trust" -}}
{{- end -}}
{{- if and .Values.membership.etcd.enabled (not .Values.membership.etcd.existingSecret) -}}
{{- fail "membership.etcd.existingSecret: name the Secret whose key holds etcd://host:2379[,host:2379]" -}}
{{- end -}}
{{- if lt (int .Values.backend.port) 2000 }}{{ fail "backend.port must be 2000-2999 (the port gives a node its role)" }}{{ end -}}
{{- if gt (int .Values.backend.port) 2999 }}{{ fail "backend.port must be 2000-2999 (the port gives a node its role)" }}{{ end -}}
{{- if or (lt (int .Values.frontend.port) 3000) (gt (int .Values.frontend.port) 3999) }}{{ fail "frontend.port must be 3000-3999 (the port gives a node its role)" }}{{ end -}}
{{- if and (ge (int .Values.worker.port) 2000) (le (int .Values.worker.port) 3999) }}{{ fail "worker.port must be outside 2000-3999 (the port gives a node its role)" }}{{ end -}}
{{- end -}}

{{/* Flags every node takes: (dict "root" $ "role" "backend" "port" 2551). */}}
{{- define "foreman.args" -}}
{{- $v := .root.Values -}}
- {{ .port | quote }}
- --host=$(POD_IP)
- --shards={{ $v.shards }}
- --metrics=0.0.0.0:{{ $v.metrics.port }}
- --log-level={{ $v.logLevel }}
{{- if not $v.membership.etcd.enabled }}
- --seeds={{ include "foreman.seeds" .root }}
{{- end }}
{{- if $v.tls.enabled }}
- --tls-cert=/etc/foreman/tls/tls.crt
- --tls-key=/etc/foreman/tls/tls.key
- --tls-ca=/etc/foreman/tls/ca.crt
{{- if $v.tls.httpSecretName }}
- --http-tls-cert=/etc/foreman/http-tls/tls.crt
- --http-tls-key=/etc/foreman/http-tls/tls.key
{{- end }}
{{- if $v.tls.etcdCASecretName }}
- --etcd-ca=/etc/foreman/etcd-ca/ca.crt
{{- end }}
{{- end }}
{{- if $v.apiTokens.existingSecret }}
- --api-token-file=/etc/foreman/tokens/{{ $v.apiTokens.secretKey }}
{{- end }}
{{- if $v.insecure }}
- --insecure
{{- end }}
{{- end -}}

{{- define "foreman.env" -}}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- if .Values.membership.etcd.enabled }}
- name: FOREMAN_MEMBERSHIP
  valueFrom:
    secretKeyRef:
      name: {{ .Values.membership.etcd.existingSecret }}
      key: {{ .Values.membership.etcd.secretKey }}
{{- end }}
{{- end -}}

{{- define "foreman.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.tls.enabled }}
- name: tls
  mountPath: /etc/foreman/tls
  readOnly: true
{{- if .Values.tls.httpSecretName }}
- name: http-tls
  mountPath: /etc/foreman/http-tls
  readOnly: true
{{- end }}
{{- if .Values.tls.etcdCASecretName }}
- name: etcd-ca
  mountPath: /etc/foreman/etcd-ca
  readOnly: true
{{- end }}
{{- end }}
{{- if .Values.apiTokens.existingSecret }}
- name: tokens
  mountPath: /etc/foreman/tokens
  readOnly: true
{{- end }}
{{- end -}}

{{- define "foreman.volumes" -}}
- name: tmp
  emptyDir: {}
{{- if .Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ .Values.tls.secretName }}
{{- if .Values.tls.httpSecretName }}
- name: http-tls
  secret:
    secretName: {{ .Values.tls.httpSecretName }}
{{- end }}
{{- if .Values.tls.etcdCASecretName }}
- name: etcd-ca
  secret:
    secretName: {{ .Values.tls.etcdCASecretName }}
{{- end }}
{{- end }}
{{- if .Values.apiTokens.existingSecret }}
- name: tokens
  secret:
    secretName: {{ .Values.apiTokens.existingSecret }}
{{- end }}
{{- end -}}

{{/* Probes on a port: (dict "root" $ "port" "metrics"). */}}
{{- define "foreman.probes" -}}
{{- $p := .root.Values.probes -}}
startupProbe:
  httpGet:
    path: /livez
    port: {{ .port }}
    scheme: {{ include "foreman.scheme" .root }}
  periodSeconds: 2
  timeoutSeconds: {{ $p.timeoutSeconds }}
  failureThreshold: {{ $p.startupFailureThreshold }}
livenessProbe:
  httpGet:
    path: /livez
    port: {{ .port }}
    scheme: {{ include "foreman.scheme" .root }}
  periodSeconds: {{ $p.periodSeconds }}
  timeoutSeconds: {{ $p.timeoutSeconds }}
  failureThreshold: {{ $p.livenessFailureThreshold }}
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ .port }}
    scheme: {{ include "foreman.scheme" .root }}
  periodSeconds: {{ $p.periodSeconds }}
  timeoutSeconds: {{ $p.timeoutSeconds }}
  failureThreshold: {{ $p.readinessFailureThreshold }}
{{- end -}}

{{/* A node's pod template: (dict "root" $ "role" "backend" "v" .Values.backend). */}}
{{- define "foreman.pod" -}}
{{- $root := .root -}}
{{- $v := .v -}}
metadata:
  labels:
    {{- include "foreman.selector" . | nindent 4 }}
    app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
spec:
  serviceAccountName: {{ include "foreman.serviceAccountName" $root }}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: foreman
      image: {{ include "foreman.image" $root }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      args:
        {{- include "foreman.args" (dict "root" $root "port" $v.port) | nindent 8 }}
        {{- if eq .role "frontend" }}
        - --http=0.0.0.0:{{ $v.httpPort }}
        - --produce=false
        {{- end }}
        {{- if eq .role "worker" }}
        - --workers={{ $v.workers }}
        {{- end }}
        {{- with $v.extraArgs }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      env:
        {{- include "foreman.env" $root | nindent 8 }}
        {{- if eq .role "backend" }}
        - name: FOREMAN_JOURNAL
          valueFrom:
            secretKeyRef:
              name: {{ $root.Values.journal.existingSecret }}
              key: {{ $root.Values.journal.secretKey }}
        {{- end }}
      ports:
        - name: remote
          containerPort: {{ $v.port }}
        {{- if eq .role "backend" }}
        - name: membership
          containerPort: {{ add $v.port 4000 }}
        {{- end }}
        {{- if eq .role "frontend" }}
        - name: http
          containerPort: {{ $v.httpPort }}
        {{- end }}
        - name: metrics
          containerPort: {{ $root.Values.metrics.port }}
      {{- include "foreman.probes" (dict "root" $root "port" "metrics") | nindent 6 }}
      securityContext:
        {{- toYaml $root.Values.securityContext | nindent 8 }}
      {{- with $v.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        {{- include "foreman.volumeMounts" $root | nindent 8 }}
  volumes:
    {{- include "foreman.volumes" $root | nindent 4 }}
  {{- with $v.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
