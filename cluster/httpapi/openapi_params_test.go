package httpapi_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// TestOpenAPIDocumentsParameters: the parameters a client may not guess
// are in /openapi.json: the traceparent header the submissions honour
// (docs/tracing.md) and the result stream's progress events.
func TestOpenAPIDocumentsParameters(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(httpapi.OpenAPI, &doc))
	for _, tc := range []struct{ method, path, name, in string }{
		{"post", "/work", "traceparent", "header"},
		{"post", "/work/batch", "traceparent", "header"},
		{"get", httpapi.PathResultsStream, "progress", "query"},
	} {
		found := false
		for _, p := range doc.Paths[tc.path][tc.method].Parameters {
			found = found || (p.Name == tc.name && p.In == tc.in)
		}
		require.True(t, found, "%s %s documents the %s %s", tc.method, tc.path, tc.in, tc.name)
	}
}
