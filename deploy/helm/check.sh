#!/usr/bin/env bash
# Checks the Helm chart without a cluster: helm lint, then `helm template`
# of every value set in deploy/helm/foreman/ci (minimal, TLS, autoscaled)
# validated by kubeconform against the Kubernetes schemas (strict: a
# misspelt field fails) and KEDA's ScaledObject CRD. Also checks that the
# validation can fail (a planted mistake is rejected) and that the chart
# refuses an install without a journal.
#
# helm and kubeconform are built from source through the Go module proxy
# (no release download) into directories named after their pinned
# versions, as .ci/run does for golangci-lint; the schemas are converted
# (deploy/kubeschema) from the k8s.io/kubernetes and KEDA modules, which the
# proxy also serves, into a directory named after their versions and the
# converter's hash. A re-run on the same machine rebuilds nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."

helm_version=v3.22.0
kubeconform_version=v0.7.0
k8s_version=1.30.14
keda_version=v2.16.1

tools="$(go env GOPATH)/tools"
helm_bin="$tools/helm-$helm_version"
if [ ! -x "$helm_bin/helm" ]; then
	echo "building helm $helm_version (once)"
	GOBIN="$helm_bin" go install "helm.sh/helm/v3/cmd/helm@$helm_version"
fi
kubeconform_bin="$tools/kubeconform-$kubeconform_version"
if [ ! -x "$kubeconform_bin/kubeconform" ]; then
	echo "building kubeconform $kubeconform_version (once)"
	GOBIN="$kubeconform_bin" go install "github.com/yannh/kubeconform/cmd/kubeconform@$kubeconform_version"
fi
helm="$helm_bin/helm"
kubeconform="$kubeconform_bin/kubeconform"

# moddir prints the module cache directory of module@version, downloading
# it through the proxy if needed (outside this module: go.mod is untouched).
moddir() {
	local d
	d=$(mktemp -d)
	(cd "$d" && go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	rmdir "$d"
}
converter_hash=$(sha256sum deploy/kubeschema/main.go | cut -c1-12)
schemas="$tools/kube-schemas-v$k8s_version-keda-$keda_version-$converter_hash"
if [ ! -f "$schemas/.complete" ]; then
	echo "converting the Kubernetes v$k8s_version and KEDA $keda_version schemas (once)"
	k8s_dir=$(moddir "k8s.io/kubernetes@v$k8s_version")
	keda_dir=$(moddir "github.com/kedacore/keda/v2@$keda_version")
	[ -f "$k8s_dir/api/openapi-spec/swagger.json" ] || { echo "no api/openapi-spec/swagger.json in $k8s_dir" >&2; exit 1; }
	rm -rf "$schemas"
	go run ./deploy/kubeschema -out "$schemas" -swagger "$k8s_dir/api/openapi-spec/swagger.json" \
		-crd "$keda_dir/config/crd/bases/keda.sh_scaledobjects.yaml"
	touch "$schemas/.complete"
fi

chart=deploy/helm/foreman
validate() {
	"$kubeconform" -strict -summary -kubernetes-version "$k8s_version" \
		-schema-location "$schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$@"
}
render() {
	"$helm" template foreman "$chart" --namespace foreman --kube-version "$k8s_version" "$@"
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for values in "$chart"/ci/*.yaml; do
	name=$(basename "$values" .yaml)
	echo "== $name"
	"$helm" lint --quiet --kube-version "$k8s_version" "$chart" -f "$values"
	render -f "$values" >"$out/$name.yaml"
	validate "$out/$name.yaml"
	# Every role, its probes and its budget are there.
	for want in 'kind: StatefulSet' 'kind: PodDisruptionBudget' 'path: /readyz' 'path: /livez' \
		'name: foreman-frontend' 'name: foreman-worker' 'name: foreman-backend'; do
		grep -q "$want" "$out/$name.yaml" || { echo "$name: the rendered chart has no '$want'" >&2; exit 1; }
	done
done
grep -q 'kind: ScaledObject' "$out/autoscaled.yaml" || { echo "autoscaled: no ScaledObject" >&2; exit 1; }
grep -q 'foreman_queue_jobs{state=\\"pending\\"}' "$out/autoscaled.yaml" || { echo "autoscaled: the ScaledObject does not query foreman_queue_jobs{state=\"pending\"}" >&2; exit 1; }
grep -q -- '--tls-cert=' "$out/tls.yaml" || { echo "tls: no --tls-cert" >&2; exit 1; }

# The validation can fail: a misspelt field and a bad KEDA field are
# rejected.
sed 's/publishNotReadyAddresses:/publishNotReadyAdresses:/' "$out/minimal.yaml" >"$out/bad.yaml"
if validate "$out/bad.yaml" >"$out/bad.log" 2>&1; then
	echo "kubeconform accepted a Service with a misspelt field: the schemas do not check" >&2
	exit 1
fi
sed 's/minReplicaCount:/minReplicas:/' "$out/autoscaled.yaml" >"$out/bad-keda.yaml"
if validate "$out/bad-keda.yaml" >"$out/bad.log" 2>&1; then
	echo "kubeconform accepted a ScaledObject with a misspelt field: the CRD schema does not check" >&2
	exit 1
fi

# An install without a journal is refused with a message that says what to
# set.
if render --set insecure=true >"$out/nojournal.log" 2>&1 || ! grep -q 'journal.existingSecret' "$out/nojournal.log"; then
	echo "the chart did not refuse an install without journal.existingSecret:" >&2
	cat "$out/nojournal.log" >&2
	exit 1
fi
echo "chart OK: $(ls "$chart"/ci/*.yaml | wc -l) value sets rendered and valid against Kubernetes $k8s_version (+ KEDA $keda_version)"
