// Command kubeschema writes the JSON schemas kubeconform validates against,
// one file per kind in kubeconform's layout (KIND-GROUP-VERSION.json, all
// lower case: deployment-apps-v1.json, service-v1.json), from sources the
// CI machine can reach without GitHub: the Kubernetes OpenAPI v2 document
// (api/openapi-spec/swagger.json of the k8s.io/kubernetes module, which the
// Go module proxy serves) and CustomResourceDefinition files (KEDA's, in
// config/crd/bases of github.com/kedacore/keda/v2).
//
// The schemas are strict, as kubeconform's -strict ones: an object with
// properties allows no others (a misspelt field is an error), unless the
// API marks it x-kubernetes-preserve-unknown-fields. Int-or-string and
// quantity fields take either form; every type also takes null, as the
// API server does. Each file carries the definitions it refers to, so it
// stands alone.
//
//	go run ./deploy/kubeschema -swagger DIR/api/openapi-spec/swagger.json \
//	    -crd KEDA/config/crd/bases/keda.sh_scaledobjects.yaml -out SCHEMAS
//	kubeconform -strict -schema-location 'SCHEMAS/{{ .ResourceKind }}{{ .KindSuffix }}.json' ...
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kubeschema:", err)
		os.Exit(1)
	}
}

type crdList []string

func (c *crdList) String() string     { return strings.Join(*c, ",") }
func (c *crdList) Set(s string) error { *c = append(*c, s); return nil }

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("kubeschema", flag.ContinueOnError)
	fs.SetOutput(stderr)
	swagger := fs.String("swagger", "", "the Kubernetes OpenAPI v2 document (k8s.io/kubernetes's api/openapi-spec/swagger.json)")
	out := fs.String("out", "", "directory to write the schemas to (created)")
	var crds crdList
	fs.Var(&crds, "crd", "a CustomResourceDefinition YAML file (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || (*swagger == "" && len(crds) == 0) {
		return errors.New("usage: kubeschema -out DIR [-swagger swagger.json] [-crd FILE]... (give the Kubernetes OpenAPI document, CRD files or both)")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	n := 0
	if *swagger != "" {
		k, err := fromSwagger(*swagger, *out)
		if err != nil {
			return err
		}
		n += k
	}
	for _, f := range crds {
		k, err := fromCRD(f, *out)
		if err != nil {
			return err
		}
		n += k
	}
	_, err := fmt.Fprintf(stderr, "kubeschema: wrote %d schemas to %s\n", n, *out)
	return err
}

// fileName is kubeconform's name for a kind's schema: KindSuffix is "-" and
// the group's first label (none for the core group), then "-" and the
// version.
func fileName(group, version, kind string) string {
	suffix := "-" + strings.ToLower(version)
	if group != "" {
		suffix = "-" + strings.ToLower(strings.Split(group, ".")[0]) + suffix
	}
	return strings.ToLower(kind) + suffix + ".json"
}

func fromSwagger(path, out string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Definitions) == 0 {
		return 0, fmt.Errorf("%s has no definitions: is it an OpenAPI v2 document?", path)
	}
	n := 0
	for _, name := range sortedKeys(doc.Definitions) {
		def := doc.Definitions[name]
		gvks, _ := def["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk, _ := g.(map[string]any)
			group, _ := gvk["group"].(string)
			version, _ := gvk["version"].(string)
			kind, _ := gvk["kind"].(string)
			if kind == "" || version == "" {
				continue
			}
			used := map[string]bool{}
			collectRefs(def, doc.Definitions, used)
			defs := map[string]any{}
			for ref := range used {
				defs[ref] = convert(doc.Definitions[ref])
			}
			s := convert(def).(map[string]any)
			if len(defs) > 0 {
				s["definitions"] = defs
			}
			if err := write(filepath.Join(out, fileName(group, version, kind)), s); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// collectRefs adds to used every definition node refers to, transitively.
func collectRefs(node any, defs map[string]map[string]any, used map[string]bool) {
	switch v := node.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/definitions/")
			if !used[name] {
				used[name] = true
				collectRefs(defs[name], defs, used)
			}
		}
		for _, c := range v {
			collectRefs(c, defs, used)
		}
	case []any:
		for _, c := range v {
			collectRefs(c, defs, used)
		}
	}
}

func fromCRD(path, out string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var crd struct {
		Spec struct {
			Group string `yaml:"group"`
			Names struct {
				Kind string `yaml:"kind"`
			} `yaml:"names"`
			Versions []struct {
				Name   string `yaml:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
				} `yaml:"schema"`
			} `yaml:"versions"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	n := 0
	for _, v := range crd.Spec.Versions {
		if v.Schema.OpenAPIV3Schema == nil {
			return n, fmt.Errorf("%s: version %s has no openAPIV3Schema", path, v.Name)
		}
		s := convert(v.Schema.OpenAPIV3Schema).(map[string]any)
		if err := write(filepath.Join(out, fileName(crd.Spec.Group, v.Name, crd.Spec.Names.Kind)), s); err != nil {
			return n, err
		}
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no versions: is it a CustomResourceDefinition?", path)
	}
	return n, nil
}

// convert returns node as JSON schema: int-or-string and quantity take
// both forms, types take null, objects with properties are closed unless
// they preserve unknown fields, and OpenAPI's formats (int32, byte, ...)
// are dropped (kubeconform's validator would assert some of them).
func convert(node any) any {
	switch v := node.(type) {
	case map[string]any:
		if v["format"] == "int-or-string" || v["x-kubernetes-int-or-string"] == true {
			return withDesc(v, map[string]any{"oneOf": []any{map[string]any{"type": []any{"string", "null"}}, map[string]any{"type": "integer"}}})
		}
		if v["format"] == "quantity" {
			return withDesc(v, map[string]any{"oneOf": []any{map[string]any{"type": []any{"string", "null"}}, map[string]any{"type": "number"}}})
		}
		out := make(map[string]any, len(v)+1)
		for k, c := range v {
			switch {
			case k == "format" || strings.HasPrefix(k, "x-kubernetes-"):
				continue
			case k == "properties":
				props := map[string]any{}
				for name, p := range c.(map[string]any) {
					props[name] = convert(p)
				}
				out[k] = props
			default:
				out[k] = convert(c)
			}
		}
		if t, ok := v["type"].(string); ok {
			out["type"] = []any{t, "null"}
		}
		if _, hasProps := v["properties"]; hasProps && v["additionalProperties"] == nil && v["x-kubernetes-preserve-unknown-fields"] != true {
			out["additionalProperties"] = false
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, c := range v {
			out[i] = convert(c)
		}
		return out
	}
	return node
}

func withDesc(from, to map[string]any) map[string]any {
	if d, ok := from["description"]; ok {
		to["description"] = d
	}
	return to
}

func write(path string, s map[string]any) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
