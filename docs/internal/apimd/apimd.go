// Package apimd renders the HTTP API's OpenAPI document (cluster/httpapi's
// openapi.json, served at /openapi.json) as Markdown, for docs/http-api.md.
// The reference part of that guide is this package's output, never edited
// by hand, and a test in docs/ fails when it is stale: the guide cannot
// disagree with what the server says it serves.
package apimd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Marker starts the generated part of docs/http-api.md: Splice replaces
// everything after it and keeps what is before it (the hand-written guide).
const Marker = "<!-- Generated from cluster/httpapi/openapi.json by `go generate ./docs`: do not edit below this line. -->"

// ErrNoMarker means the document has no Marker line: Splice would not know
// which part is hand-written.
var ErrNoMarker = errors.New("apimd: the document has no generated-part marker")

// Splice returns doc with everything after Marker replaced by generated.
func Splice(doc, generated []byte) ([]byte, error) {
	i := bytes.Index(doc, []byte(Marker))
	if i < 0 {
		return nil, fmt.Errorf("%w: add a line %q where the reference starts", ErrNoMarker, Marker)
	}
	out := append([]byte{}, doc[:i+len(Marker)]...)
	out = append(out, "\n\n"...)
	return append(out, generated...), nil
}

// The OpenAPI subset openapi.json uses. Schemas are kept as raw maps: they
// are only described, never validated.
type (
	spec struct {
		Info struct {
			Title, Version, Description string
		}
		Paths      map[string]map[string]operation
		Components struct {
			Parameters map[string]parameter
			Responses  map[string]response
			Schemas    map[string]map[string]any
		}
	}
	operation struct {
		Summary, Description string
		Parameters           []parameter
		RequestBody          *struct {
			Required bool
			Content  map[string]struct{ Schema map[string]any }
		}
		Responses map[string]response
	}
	parameter struct {
		Ref         string `json:"$ref"`
		Name, In    string
		Required    bool
		Description string
		Schema      map[string]any
	}
	response struct {
		Ref         string `json:"$ref"`
		Description string
		Headers     map[string]struct {
			Description string
			Schema      map[string]any
		}
		Content map[string]struct{ Schema map[string]any }
	}
)

// methods in the order a reader expects them.
var methods = []string{"get", "post", "put", "patch", "delete"}

// Render returns the Markdown reference of the OpenAPI document js: every
// route with its parameters, body and answers, then every schema.
func Render(js []byte) ([]byte, error) {
	var s spec
	if err := json.Unmarshal(js, &s); err != nil {
		return nil, fmt.Errorf("apimd: reading the OpenAPI document: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Reference: %s (version %s)\n\n%s\n\n", s.Info.Title, s.Info.Version, oneLine(s.Info.Description))
	b.WriteString("| route | what it does |\n| --- | --- |\n")
	paths := sortedKeys(s.Paths)
	for _, p := range paths {
		for _, m := range methods {
			if op, ok := s.Paths[p][m]; ok {
				fmt.Fprintf(&b, "| [`%s %s`](#%s) | %s |\n", strings.ToUpper(m), p, anchor(strings.ToUpper(m)+" "+p), cell(op.Summary))
			}
		}
	}
	for _, p := range paths {
		for _, m := range methods {
			op, ok := s.Paths[p][m]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "\n### %s %s\n\n%s\n", strings.ToUpper(m), p, oneLine(op.Summary))
			if op.Description != "" {
				fmt.Fprintf(&b, "\n%s\n", oneLine(op.Description))
			}
			writeParams(&b, s, op.Parameters)
			if rb := op.RequestBody; rb != nil {
				b.WriteString("\nRequest body")
				if rb.Required {
					b.WriteString(" (required)")
				}
				b.WriteString(":\n\n")
				for _, ct := range sortedKeys(rb.Content) {
					fmt.Fprintf(&b, "- `%s`: %s\n", ct, typeOf(rb.Content[ct].Schema))
				}
			}
			b.WriteString("\n| answer | meaning | body |\n| --- | --- | --- |\n")
			for _, code := range sortedKeys(op.Responses) {
				r := op.Responses[code]
				if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
					r = s.Components.Responses[name]
				}
				var bodies []string
				for _, ct := range sortedKeys(r.Content) {
					bodies = append(bodies, fmt.Sprintf("`%s` %s", ct, typeOf(r.Content[ct].Schema)))
				}
				for _, h := range sortedKeys(r.Headers) {
					bodies = append(bodies, fmt.Sprintf("header `%s`: %s", h, r.Headers[h].Description))
				}
				fmt.Fprintf(&b, "| %s | %s | %s |\n", code, cell(r.Description), cell(strings.Join(bodies, "; ")))
			}
		}
	}
	b.WriteString("\n## Schemas\n")
	for _, name := range sortedKeys(s.Components.Schemas) {
		sc := s.Components.Schemas[name]
		fmt.Fprintf(&b, "\n### %s\n\n", name)
		if d, ok := sc["description"].(string); ok {
			fmt.Fprintf(&b, "%s\n\n", oneLine(d))
		}
		props, _ := sc["properties"].(map[string]any)
		if len(props) == 0 {
			fmt.Fprintf(&b, "%s\n", typeOf(sc))
			continue
		}
		req := map[string]bool{}
		if rs, ok := sc["required"].([]any); ok {
			for _, r := range rs {
				req[fmt.Sprint(r)] = true
			}
		}
		b.WriteString("| field | type | required | meaning |\n| --- | --- | --- | --- |\n")
		for _, f := range sortedKeys(props) {
			p, _ := props[f].(map[string]any)
			d, _ := p["description"].(string)
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f, cell(typeOf(p)), yes(req[f]), cell(d))
		}
	}
	return []byte(b.String()), nil
}

// writeParams writes an operation's parameters as a table.
func writeParams(b *strings.Builder, s spec, ps []parameter) {
	if len(ps) == 0 {
		return
	}
	b.WriteString("\n| parameter | in | required | type | meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, p := range ps {
		if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
			p = s.Components.Parameters[name]
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", p.Name, p.In, yes(p.Required), cell(typeOf(p.Schema)), cell(p.Description))
	}
}

// typeOf describes a schema in a few words: a link to a named schema, a
// type with its format, enum and bounds, an array of something.
func typeOf(sc map[string]any) string {
	if sc == nil {
		return "any"
	}
	if ref, ok := sc["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		return fmt.Sprintf("[%s](#%s)", name, anchor(name))
	}
	t, _ := sc["type"].(string)
	if t == "" {
		t = "any JSON"
	}
	if t == "array" {
		items, _ := sc["items"].(map[string]any)
		t = "array of " + typeOf(items)
	}
	var extra []string
	if f, ok := sc["format"].(string); ok {
		extra = append(extra, f)
	}
	if e, ok := sc["enum"].([]any); ok {
		var vs []string
		for _, v := range e {
			vs = append(vs, fmt.Sprintf("`%v`", v))
		}
		extra = append(extra, "one of "+strings.Join(vs, ", "))
	}
	for _, k := range []string{"minimum", "maximum", "maxLength", "maxItems", "default"} {
		if v, ok := sc[k]; ok {
			extra = append(extra, fmt.Sprintf("%s %v", k, v))
		}
	}
	if len(extra) > 0 {
		t += " (" + strings.Join(extra, "; ") + ")"
	}
	return t
}

// anchor is GitHub's heading anchor for a heading text.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cell makes s safe inside a table cell.
func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", `\|`) }

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return slices.Clip(keys)
}
