package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSubmitFileCommand: foreman submit --file against a real node.
func TestSubmitFileCommand(t *testing.T) {
	t.Parallel()
	addr, _ := startAPI(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	var many strings.Builder
	for range 25 {
		many.WriteString(`{"type":"square","payload":3}` + "\n")
	}
	good := write("good.ndjson", many.String()+"\n"+`{"id":"f-1","type":"square","payload":4}`+"\n"+`{"id":"f-1","type":"square","payload":4}`)
	huge := `{"id":"f-huge","type":"square","payload":"` + strings.Repeat("x", 1<<20+10) + `"}`
	partial := write("partial.ndjson", `{"id":"f-2","type":"square","payload":5}`+"\n"+huge+"\n")
	bad := write("bad.ndjson", `{"type":"square","payload":1}`+"\n"+"not json\n"+`{"payload":2}`+"\n")
	empty := write("empty.ndjson", "\n\n")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "Accepted", args: []string{"--file", good, "--batch", "10", "--to", addr}, wantCode: 0, wantOut: "submitted 27 jobs: 27 accepted, 0 rejected\n"},
		{name: "PartialFailure", args: []string{"--file", partial, "--to", addr}, wantCode: 1, wantOut: "submitted 2 jobs: 1 accepted, 1 rejected\n", wantErr: "partial.ndjson:2: work f-huge: 413"},
		{name: "BadLines", args: []string{"--file", bad, "--to", addr}, wantCode: 2, wantErr: "bad.ndjson:2: httpapi: invalid request: malformed JSON"},
		{name: "BadLinesCount", args: []string{"--file", bad, "--to", addr}, wantCode: 2, wantErr: "has 2 bad line(s); nothing was sent"},
		{name: "MissingType", args: []string{"--file", bad, "--to", addr}, wantCode: 2, wantErr: `bad.ndjson:3: httpapi: invalid request: missing "type"`},
		{name: "Empty", args: []string{"--file", empty, "--to", addr}, wantCode: 2, wantErr: "has no jobs"},
		{name: "NoFile", args: []string{"--file", filepath.Join(dir, "nope"), "--to", addr}, wantCode: 2, wantErr: "cannot read the jobs"},
		{name: "BadBatch", args: []string{"--file", good, "--batch", "0"}, wantCode: 2, wantErr: "--batch 0 must be 1-10000"},
		{name: "WithType", args: []string{"--file", good, "--type", "square"}, wantCode: 2, wantErr: "leave out --type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(runSubmit, tc.args...)
			require.Equal(t, tc.wantCode, code, "stdout: %s\nstderr: %.2000s", out, errOut)
			require.Contains(t, out, tc.wantOut)
			require.Contains(t, errOut, tc.wantErr)
		})
	}
}
