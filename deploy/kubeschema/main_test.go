package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const swagger = `{"definitions": {
  "io.k8s.api.core.v1.Service": {
    "type": "object",
    "properties": {"apiVersion": {"type": "string"}, "spec": {"$ref": "#/definitions/io.k8s.api.core.v1.ServiceSpec"}},
    "x-kubernetes-group-version-kind": [{"group": "", "kind": "Service", "version": "v1"}]
  },
  "io.k8s.api.core.v1.ServiceSpec": {
    "type": "object",
    "properties": {"port": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}, "n": {"type": "integer", "format": "int32"}}
  },
  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
  "io.k8s.api.apps.v1.Deployment": {
    "type": "object", "properties": {"kind": {"type": "string"}},
    "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]
  }
}}`

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: keda.sh
  names: {kind: ScaledObject}
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              minReplicaCount: {type: integer, format: int32}
              free: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: string}}}
`

// TestConvert writes kubeconform's file names, carries the definitions a
// kind refers to, closes objects (strict), lets int-or-string take both
// forms and reads a CRD's schema.
func TestConvert(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "swagger.json")
	cr := filepath.Join(dir, "crd.yaml")
	require.NoError(t, os.WriteFile(sw, []byte(swagger), 0o600))
	require.NoError(t, os.WriteFile(cr, []byte(crd), 0o600))
	out := filepath.Join(dir, "out")
	require.NoError(t, run([]string{"-swagger", sw, "-crd", cr, "-out", out}, io.Discard))

	names, err := filepath.Glob(filepath.Join(out, "*.json"))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"service-v1.json", "deployment-apps-v1.json", "scaledobject-keda-v1alpha1.json"},
		func() []string {
			var b []string
			for _, n := range names {
				b = append(b, filepath.Base(n))
			}
			return b
		}())

	read := func(name string) map[string]any {
		b, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	svc := read("service-v1.json")
	require.Equal(t, false, svc["additionalProperties"])
	require.Equal(t, []any{"object", "null"}, svc["type"])
	defs := svc["definitions"].(map[string]any)
	require.Len(t, defs, 2, "the spec and the IntOrString it refers to")
	ios := defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"].(map[string]any)
	require.Len(t, ios["oneOf"], 2)
	spec := defs["io.k8s.api.core.v1.ServiceSpec"].(map[string]any)
	n := spec["properties"].(map[string]any)["n"].(map[string]any)
	require.NotContains(t, n, "format")
	require.Nil(t, read("deployment-apps-v1.json")["definitions"])

	so := read("scaledobject-keda-v1alpha1.json")
	sp := so["properties"].(map[string]any)["spec"].(map[string]any)
	require.Equal(t, false, sp["additionalProperties"])
	free := sp["properties"].(map[string]any)["free"].(map[string]any)
	require.NotContains(t, free, "additionalProperties", "preserve-unknown-fields stays open")
}

// TestRefusesNoInput: without sources the command says how to call it.
func TestRefusesNoInput(t *testing.T) {
	require.ErrorContains(t, run([]string{"-out", t.TempDir()}, io.Discard), "usage: kubeschema")
}
