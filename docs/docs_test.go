package docs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/docs/internal/apimd"
)

// repo is the repository root; binDir holds the foreman built for the
// shell blocks.
var repo, binDir string

func TestMain(m *testing.M) {
	code, err := setUp(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setUp(m *testing.M) (int, error) {
	var err error
	if repo, err = filepath.Abs(".."); err != nil {
		return 1, err
	}
	if binDir, err = os.MkdirTemp("", "foreman-docs-bin-*"); err != nil {
		return 1, err
	}
	defer func() { _ = os.RemoveAll(binDir) }()
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "foreman"), "./cmd/foreman")
	build.Dir = repo
	build.Env = append(os.Environ(), trimpathEnv()) // as the repo blocks build, so they hit the cache
	if out, err := build.CombinedOutput(); err != nil {
		return 1, fmt.Errorf("building foreman: %w\n%s", err, out)
	}
	return m.Run(), nil
}

func allBlocks(t *testing.T) map[string][]block {
	t.Helper()
	files, err := docFiles(repo)
	require.NoError(t, err)
	out := map[string][]block{}
	for _, f := range files {
		md, err := os.ReadFile(filepath.Join(repo, f))
		require.NoError(t, err)
		bs, err := parseBlocks(f, md)
		require.NoError(t, err)
		out[f] = bs
	}
	return out
}

// newEnv makes the directories a file's shell blocks run in: an empty one,
// and a copy of the repository made of symlinks (for repo blocks, so that
// go run ./cmd/foreman writes its foreman-data there, not in the tree).
func newEnv(t *testing.T) shellEnv {
	t.Helper()
	ci, err := os.ReadFile(filepath.Join(repo, ".ci", "run"))
	require.NoError(t, err)
	mirror := t.TempDir()
	entries, err := os.ReadDir(repo)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() == "foreman-data" || e.Name() == ".git" {
			continue
		}
		require.NoError(t, os.Symlink(filepath.Join(repo, e.Name()), filepath.Join(mirror, e.Name())))
	}
	return shellEnv{repo: repo, binDir: binDir, ciRun: string(ci), workDir: t.TempDir(), mirror: mirror}
}

// TestShellBlocks runs every ```sh block of README.md and docs/**/*.md, a
// file's blocks in order in one directory, with the foreman of this tree on
// PATH. Files run in parallel (as many at once as -parallel allows): each
// uses ports of its own (TestDistinctPorts).
func TestShellBlocks(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real nodes; not with -short")
	}
	for file, blocks := range sortedFiles(allBlocks(t)) {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			// A page whose later part needs a service that is not installed
			// runs up to there, and says loudly what it left out.
			for i, b := range blocks {
				if missing, fail := needsMissing(blocks[i : i+1]); len(missing) > 0 {
					if fail {
						t.Fatalf("%s needs %s, which this run requires (CI)", b.where(), strings.Join(missing, ", "))
					}
					t.Logf("SKIPPED the blocks from %s on: they need %s", b.where(), strings.Join(missing, ", "))
					blocks = blocks[:i]
					break
				}
			}
			n := 0
			for _, b := range blocks {
				if b.lang == "sh" {
					n++
				}
			}
			if n == 0 {
				t.Skip("no sh blocks")
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			start := time.Now()
			require.NoError(t, runShellBlocks(ctx, newEnv(t), blocks))
			t.Logf("%d sh blocks in %v", n, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestGoBlocks compiles every ```go block of the documents and runs the
// programs.
func TestGoBlocks(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("compiles a module; not with -short")
	}
	var gos []block
	for _, blocks := range sortedFiles(allBlocks(t)) {
		for _, b := range blocks {
			if b.lang == "go" {
				gos = append(gos, b)
			}
		}
	}
	if len(gos) == 0 {
		t.Skip("no go blocks")
	}
	require.NoError(t, runGoBlocks(t.Context(), repo, t.TempDir(), gos))
}

// sortedFiles iterates the documents in name order.
func sortedFiles(m map[string][]block) func(func(string, []block) bool) {
	return func(yield func(string, []block) bool) {
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sortStrings(names)
		for _, n := range names {
			if !yield(n, m[n]) {
				return
			}
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestDriftFails proves the two ways docs drift from the code fail the run:
// a renamed or removed flag in a shell block, a removed symbol in a Go block
// (issue 40: cluster/journal/doc.go's journal.ErrFenced was such a symbol).
func TestDriftFails(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs foreman and compiles a module; not with -short")
	}
	t.Run("RenamedFlag", func(t *testing.T) {
		md := "<!-- doctest: output=\"consumed 3 results\" -->\n```sh\nforeman --jobs 3 --delay 0 --no-such-flag\n```\n"
		bs, err := parseBlocks("drift.md", []byte(md))
		require.NoError(t, err)
		err = runShellBlocks(t.Context(), newEnv(t), bs)
		require.Error(t, err)
		require.Contains(t, err.Error(), "drift.md:2")
		require.Contains(t, err.Error(), "no-such-flag")
		// The same block with the flag as it is passes: the failure above is the flag's.
		bs[0].body = "foreman --jobs 3 --delay 0\n"
		require.NoError(t, runShellBlocks(t.Context(), newEnv(t), bs))
	})
	t.Run("RemovedSymbol", func(t *testing.T) {
		md := "```go\npackage main\n\nimport \"github.com/foreman-actors/foreman/cluster/journal\"\n\nvar _ = journal.ErrFenced\n\nfunc main() {}\n```\n"
		bs, err := parseBlocks("drift.md", []byte(md))
		require.NoError(t, err)
		err = runGoBlocks(t.Context(), repo, t.TempDir(), bs)
		require.Error(t, err)
		require.Contains(t, err.Error(), "undefined: journal.ErrFenced")
		require.Contains(t, err.Error(), "drift.md:1")
	})
	t.Run("Fragment", func(t *testing.T) {
		bs, err := parseBlocks("drift.md", []byte("```go\nx := 1\n```\n"))
		require.NoError(t, err)
		require.ErrorContains(t, runGoBlocks(t.Context(), repo, t.TempDir(), bs), "must be a whole file")
	})
}

func TestParseBlocks(t *testing.T) {
	t.Parallel()
	md := "text\n<!-- doctest: background ready=\"http api started\" -->\n```sh\nforeman 3761\n```\n\n```text\nnot run\n```\n"
	bs, err := parseBlocks("x.md", []byte(md))
	require.NoError(t, err)
	require.Len(t, bs, 2)
	require.True(t, bs[0].dir.background)
	require.Equal(t, "http api started", bs[0].dir.ready.String())
	require.Equal(t, 3, bs[0].line)
	require.Equal(t, "foreman 3761\n", bs[0].body)
	require.Equal(t, "text", bs[1].lang)

	_, err = parseBlocks("x.md", []byte("<!-- doctest: backgrund -->\n```sh\nx\n```\n"))
	require.ErrorContains(t, err, `unknown doctest directive "backgrund"`)
	_, err = parseBlocks("x.md", []byte("<!-- doctest: background -->\nprose\n```sh\nx\n```\n"))
	require.ErrorContains(t, err, "right before a fence")
	_, err = parseBlocks("x.md", []byte("- a list item:\n  ```sh\n  foreman 2551\n  ```\n"))
	require.ErrorContains(t, err, "indented ```sh block is never run")
	_, err = parseBlocks("x.md", []byte("```sh\nx\n"))
	require.ErrorContains(t, err, "never closed")
}

// TestHTTPAPIReference fails when docs/http-api.md's reference is not what
// cluster/httpapi's OpenAPI document renders to: run go generate ./docs.
func TestHTTPAPIReference(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("http-api.md")
	require.NoError(t, err)
	ref, err := apimd.Render(httpapi.OpenAPI)
	require.NoError(t, err)
	want, err := apimd.Splice(doc, ref)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, doc), "docs/http-api.md is stale: run go generate ./docs and commit it")
}

// TestLengths holds the two front pages to what a newcomer reads (issue 40).
func TestLengths(t *testing.T) {
	t.Parallel()
	for file, most := range map[string]int{"README.md": 250, "BENCHMARKS.md": 300} {
		b, err := os.ReadFile(filepath.Join(repo, file))
		require.NoError(t, err)
		require.LessOrEqual(t, bytes.Count(b, []byte("\n")), most, "%s has grown past %d lines: move reference material to docs/", file, most)
	}
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	anchorRE  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
)

// anchors returns the fragments GitHub gives a Markdown document's headings
// (lower case, punctuation dropped, spaces to hyphens, a repeated one
// suffixed -1, -2, ...) and its explicit <a id> anchors. Headings inside
// code blocks do not count.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	count := map[string]int{}
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range anchorRE.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := count[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		count[slug]++
	}
	return out
}

// TestLinks: every relative link of the documents names a file that
// exists, and a link's #fragment a heading of that file (a guide renamed or
// a section retitled breaks no link unnoticed).
func TestLinks(t *testing.T) {
	t.Parallel()
	files, err := docFiles(repo)
	require.NoError(t, err)
	cache := map[string]map[string]bool{}
	anchorsOf := func(p string) map[string]bool {
		if a, ok := cache[p]; ok {
			return a
		}
		md, err := os.ReadFile(p)
		require.NoError(t, err)
		cache[p] = anchors(string(md))
		return cache[p]
	}
	for _, f := range files {
		md, err := os.ReadFile(filepath.Join(repo, f))
		require.NoError(t, err)
		for _, m := range linkRE.FindAllStringSubmatch(string(md), -1) {
			target, frag := m[1], strings.TrimPrefix(m[2], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.ContainsAny(target, "([") { // a URL, or Go code in a text block
				continue
			}
			if target == "" && frag == "" {
				continue
			}
			p := filepath.Join(repo, f)
			if target != "" {
				p = filepath.Join(repo, filepath.Dir(f), target)
				st, err := os.Stat(p)
				require.NoError(t, err, "%s links to %s, which does not exist", f, target)
				if st.IsDir() || !strings.HasSuffix(p, ".md") {
					continue
				}
			}
			if frag != "" {
				require.True(t, anchorsOf(p)[frag], "%s links to %s#%s: %s has no such heading", f, target, frag, filepath.Base(p))
			}
		}
	}
}

func TestAnchors(t *testing.T) {
	t.Parallel()
	md := "# Foreman as a library: every package\n## Many masters (shards)\n```sh\n# not a heading\n```\n## Notes\n## Notes\n<a id=\"x-1\"></a>\n"
	a := anchors(md)
	for _, want := range []string{"foreman-as-a-library-every-package", "many-masters-shards", "notes", "notes-1", "x-1"} {
		require.True(t, a[want], "missing %s in %v", want, a)
	}
	require.False(t, a["not-a-heading"])
}

var portRE = regexp.MustCompile(`127\.0\.0\.1:(\d{4,5})\b|\bforeman (\d{4,5})\b|--(?:pprof|metrics|listen-client-urls|listen-peer-urls) \S*?(\d{4,5})\b`)

// TestDistinctPorts: the files' shell blocks run in parallel, so no two
// files may use the same loopback port, counting the ports a node derives
// from its own (a backend's membership endpoint at +4000, a frontend's HTTP
// API at +5000).
func TestDistinctPorts(t *testing.T) {
	t.Parallel()
	owner := map[string]string{}
	for file, blocks := range sortedFiles(allBlocks(t)) {
		for _, b := range blocks {
			if b.lang != "sh" || b.dir.ci {
				continue
			}
			for _, m := range portRE.FindAllStringSubmatch(b.body, -1) {
				p := m[1] + m[2] + m[3]
				ports := []string{p}
				var n int
				_, _ = fmt.Sscan(p, &n)
				switch {
				case n >= 2000 && n < 3000:
					ports = append(ports, fmt.Sprint(n+4000))
				case n >= 3000 && n < 4000:
					ports = append(ports, fmt.Sprint(n+5000))
				}
				for _, q := range ports {
					if o, ok := owner[q]; ok && o != file {
						t.Errorf("port %s is used by %s and %s (%s): files run in parallel, give each its own", q, o, file, b.where())
					}
					owner[q] = file
				}
			}
		}
	}
}

var flagCellRE = regexp.MustCompile("(?m)^\\| `(--[a-z0-9-]+)")

// TestFlagsTable: every flag docs/operations.md's table lists is one
// foreman --help prints, so a renamed or removed flag fails here even where
// no runnable block uses it. (Flags the table lacks are not an error: other
// pages document their own.)
func TestFlagsTable(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("operations.md")
	require.NoError(t, err)
	help, _ := exec.Command(filepath.Join(binDir, "foreman"), "--help").CombinedOutput() //nolint:gosec // this tree's own binary
	require.Contains(t, string(help), "flags:", "foreman --help printed no flags:\n%s", help)
	rows := flagCellRE.FindAllStringSubmatch(string(md), -1)
	require.NotEmpty(t, rows, "operations.md has no flags table")
	for _, m := range rows {
		name := strings.TrimPrefix(m[1], "--")
		require.Regexp(t, `(?m)^\s+-`+regexp.QuoteMeta(name)+`\b`, string(help),
			"operations.md lists %s, which foreman --help does not know: rename or remove it", m[1])
	}
}
