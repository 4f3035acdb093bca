package docs_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A block is one fenced code block of a Markdown file, with the doctest
// directive written on the line just before its fence, if any:
//
//	<!-- doctest: background ready="http api started" -->
//	```sh
//	foreman 3761 --seeds 127.0.0.1:2761
//	```
type block struct {
	file string // relative to the repository
	line int    // of the opening fence
	lang string // sh, go, text, ...
	body string
	dir  directive
}

func (b block) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// A directive says how a block runs. Without one a ```sh block runs in the
// foreground and must exit 0 within a minute; a ```go block is compiled and,
// if it is package main, run.
type directive struct {
	background  bool           // start it, go on; it is stopped (SIGTERM) when the file's blocks are done
	ready       *regexp.Regexp // with background: wait until its output matches
	output      *regexp.Regexp // the block's output must match
	timeout     time.Duration  // foreground: most it may take (default 60 s)
	ci          bool           // not run here: each command must be one .ci/run runs (the test suite)
	repo        bool           // run in a copy of the repository (go run ./cmd/foreman ...)
	compileOnly bool           // go: compile, do not run (a program that serves until stopped)
	cleanup     bool           // run when the file's blocks end, failed or not, after its background blocks stop
	needs       []string       // services the block needs installed: etcd, postgres (see needsMissing)
}

var (
	fenceRE     = regexp.MustCompile("^```([a-zA-Z0-9_+-]*)\\s*$")
	directiveRE = regexp.MustCompile(`^<!--\s*doctest:(.*?)-->\s*$`)
	argRE       = regexp.MustCompile(`([a-z-]+)(?:=(?:"([^"]*)"|(\S+)))?`)
)

// parseBlocks returns the fenced blocks of a Markdown document.
func parseBlocks(file string, md []byte) ([]block, error) {
	var (
		out     []block
		cur     *block
		pending *directive
		body    strings.Builder
	)
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if cur != nil {
			if strings.TrimSpace(line) == "```" {
				cur.body = body.String()
				out = append(out, *cur)
				cur = nil
				body.Reset()
				continue
			}
			body.WriteString(line)
			body.WriteByte('\n')
			continue
		}
		if m := directiveRE.FindStringSubmatch(line); m != nil {
			d, err := parseDirective(m[1])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n, err)
			}
			pending = &d
			continue
		}
		if m := fenceRE.FindStringSubmatch(strings.TrimLeft(line, " \t")); m != nil && line != strings.TrimLeft(line, " \t") && (m[1] == "sh" || m[1] == "go") {
			return nil, fmt.Errorf("%s:%d: an indented ```%s block is never run: start its fence at the beginning of the line (or make it ```text)", file, n, m[1])
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			cur = &block{file: file, line: n, lang: m[1], dir: directive{timeout: time.Minute}}
			if pending != nil {
				cur.dir = *pending
			}
			pending = nil
			continue
		}
		if pending != nil && strings.TrimSpace(line) != "" {
			return nil, fmt.Errorf("%s:%d: a doctest directive must be right before a fence", file, n-1)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: the block is never closed", file, cur.line)
	}
	return out, sc.Err()
}

func parseDirective(s string) (directive, error) {
	d := directive{timeout: time.Minute}
	for _, m := range argRE.FindAllStringSubmatch(s, -1) {
		val := m[2] + m[3]
		var err error
		switch m[1] {
		case "background":
			d.background = true
		case "ready":
			d.ready, err = regexp.Compile(val)
		case "output":
			d.output, err = regexp.Compile(val)
		case "timeout":
			d.timeout, err = time.ParseDuration(val)
		case "ci":
			d.ci = true
		case "repo":
			d.repo = true
		case "compile-only":
			d.compileOnly = true
		case "cleanup":
			d.cleanup = true
		case "needs":
			for _, n := range strings.Split(val, ",") {
				if _, ok := services[n]; !ok {
					return d, fmt.Errorf("doctest directive needs=%s: unknown service %q (know: etcd, postgres)", val, n)
				}
				d.needs = append(d.needs, n)
			}
		default:
			return d, fmt.Errorf("unknown doctest directive %q (know: background, ready=, output=, timeout=, ci, repo, compile-only, cleanup, needs=)", m[1])
		}
		if err != nil {
			return d, fmt.Errorf("doctest directive %s: %w", m[1], err)
		}
	}
	return d, nil
}

// A service is a program some blocks need installed: the blocks start
// their own server, as a newcomer would on one machine. present says whether
// it is installed; required whether this run must have it (CI installs both
// and sets these variables, so there a missing one fails instead of skipping).
type service struct {
	present  func() bool
	required func() bool
	install  string
}

var services = map[string]service{
	"etcd": {
		present:  func() bool { _, err := exec.LookPath("etcd"); return err == nil },
		required: func() bool { return os.Getenv("FOREMAN_TEST_ETCD") == "require" },
		install:  "apt-get install etcd-server",
	},
	"postgres": {
		present: func() bool {
			bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
			return len(bins) > 0
		},
		required: func() bool { return os.Getenv("FOREMAN_TEST_POSTGRES_DSN") != "" },
		install:  "apt-get install postgresql",
	},
}

// needsMissing says which services a file's blocks need that are not
// installed, and whether that is an error here (a required one) rather than
// a reason to skip the file.
func needsMissing(blocks []block) (missing []string, fail bool) {
	seen := map[string]bool{}
	for _, b := range blocks {
		for _, n := range b.dir.needs {
			if seen[n] {
				continue
			}
			seen[n] = true
			if s := services[n]; !s.present() {
				missing = append(missing, fmt.Sprintf("%s (%s)", n, s.install))
				fail = fail || s.required()
			}
		}
	}
	return missing, fail
}

// docFiles lists README.md, BENCHMARKS.md and every Markdown file under
// docs/, so a guide added later is run without anyone registering it.
func docFiles(repo string) ([]string, error) {
	files := []string{"README.md", "BENCHMARKS.md"}
	err := filepath.WalkDir(filepath.Join(repo, "docs"), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(repo, p)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// shellEnv is what the shell blocks run with.
type shellEnv struct {
	repo    string // the repository
	binDir  string // holds the freshly built foreman
	ciRun   string // .ci/run's text
	workDir string // the file's blocks run here, in order
	mirror  string // a copy of the repository (symlinks) for repo blocks
}

// safeBuffer collects a background block's output.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type bgProc struct {
	b    block
	cmd  *exec.Cmd
	out  *safeBuffer
	done chan struct{}
}

// runShellBlocks runs one file's ```sh blocks in order in env.workDir and
// returns the first failure, naming the block and its output. Background
// blocks are stopped before it returns.
func runShellBlocks(ctx context.Context, env shellEnv, blocks []block) (err error) {
	var bg []*bgProc
	defer func() {
		for i := len(bg) - 1; i >= 0; i-- {
			stopGroup(bg[i])
		}
		for _, b := range blocks {
			if b.lang == "sh" && b.dir.cleanup {
				if cerr := runCleanup(env, b); cerr != nil && err == nil {
					err = cerr
				}
			}
		}
	}()
	for _, b := range blocks {
		if b.lang != "sh" || b.dir.cleanup {
			continue
		}
		if b.dir.ci {
			for _, c := range commands(b.body) {
				if !strings.Contains(env.ciRun, c) {
					return fmt.Errorf("%s: %q is marked ci but .ci/run does not run it", b.where(), c)
				}
			}
			continue
		}
		cmd := shellCmd(env, b)
		out := &safeBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if b.dir.background {
			if err := cmd.Start(); err != nil {
				return fmt.Errorf("%s: starting: %w", b.where(), err)
			}
			p := &bgProc{b: b, cmd: cmd, out: out, done: make(chan struct{})}
			go func() { _ = cmd.Wait(); close(p.done) }()
			bg = append(bg, p)
			if b.dir.ready != nil {
				if err := waitReady(ctx, p); err != nil {
					return err
				}
			}
			continue
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("%s: starting: %w", b.where(), err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(b.dir.timeout):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = fmt.Errorf("still running after %v (killed: %w)", b.dir.timeout, <-done)
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = fmt.Errorf("%w (killed: %w)", ctx.Err(), <-done)
		}
		if err != nil {
			return fmt.Errorf("%s: %w\n%s\n--- output:\n%s%s", b.where(), err, indent(b.body), out.String(), bgOutputs(bg))
		}
		if b.dir.output != nil && !b.dir.output.MatchString(out.String()) {
			return fmt.Errorf("%s: the output does not match %q:\n%s", b.where(), b.dir.output, out.String())
		}
	}
	return nil
}

// shellCmd is the command that runs a shell block, in its own process group.
func shellCmd(env shellEnv, b block) *exec.Cmd {
	dir := env.workDir
	if b.dir.repo {
		dir = env.mirror
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.body) //nolint:gosec // the documentation's own commands, run on purpose
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+env.binDir+string(os.PathListSeparator)+os.Getenv("PATH"), trimpathEnv())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// trimpathEnv adds -trimpath to GOFLAGS. The go build and go run of repo
// blocks work in a copy of the repository at another path; without
// -trimpath Go's build cache keys this module's packages by their
// directory and compiles them all again (minutes on a busy 2-core machine),
// while with it they reuse what TestMain's build compiled.
func trimpathEnv() string {
	return "GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -trimpath")
}

// runCleanup runs a cleanup block (a server the file started, stopped),
// whatever happened before it.
func runCleanup(env shellEnv, b block) error {
	cmd := shellCmd(env, b)
	out := &safeBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: starting: %w", b.where(), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(b.dir.timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = fmt.Errorf("still running after %v (killed: %w)", b.dir.timeout, <-done)
	}
	if err != nil {
		return fmt.Errorf("%s (cleanup): %w\n%s", b.where(), err, out.String())
	}
	return nil
}

// waitReady waits until a background block prints what its ready=
// directive says, or fails when it exits first or takes over a minute.
func waitReady(ctx context.Context, p *bgProc) error {
	deadline := time.After(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if p.b.dir.ready.MatchString(p.out.String()) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s: exited before printing %q:\n%s", p.b.where(), p.b.dir.ready, p.out.String())
		case <-deadline:
			return fmt.Errorf("%s: no %q within a minute:\n%s", p.b.where(), p.b.dir.ready, p.out.String())
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stopGroup ends a background block as Ctrl-C would, then for good.
func stopGroup(p *bgProc) {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func bgOutputs(bg []*bgProc) string {
	var b strings.Builder
	for _, p := range bg {
		out := p.out.String()
		if len(out) > 4000 {
			out = "..." + out[len(out)-4000:]
		}
		fmt.Fprintf(&b, "--- background %s:\n%s", p.b.where(), out)
	}
	return b.String()
}

// commands returns a shell block's commands, comments and blank lines left out.
func commands(body string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// runGoBlocks compiles every ```go block as a file of its own package in a
// temporary module whose foreman is this repository (a replace directive),
// and runs those that are package main (unless compile-only). A block must
// be a whole file: a fragment is an error (use ```text for one).
func runGoBlocks(ctx context.Context, repo, dir string, blocks []block) error {
	mod := fmt.Sprintf("module doctest\n\ngo 1.26\n\nrequire github.com/foreman-actors/foreman v0.0.0\n\nreplace github.com/foreman-actors/foreman => %s\n", repo)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o600); err != nil {
		return err
	}
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o600); err != nil {
		return err
	}
	where := map[string]block{}
	var mains []string
	for i, b := range blocks {
		name := fmt.Sprintf("b%02d", i)
		if !regexp.MustCompile(`(?m)^package \w+`).MatchString(b.body) {
			return fmt.Errorf("%s: a ```go block must be a whole file, starting with its package clause (use ```text for a fragment)", b.where())
		}
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name, "doc.go"), []byte(b.body), 0o600); err != nil {
			return err
		}
		where[name] = b
		if strings.HasPrefix(strings.TrimSpace(b.body), "package main") && !b.dir.compileOnly {
			mains = append(mains, name)
		}
	}
	goCmd := func(timeout time.Duration, args ...string) (string, error) {
		c, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cmd := exec.CommandContext(c, "go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// where maps the temporary files back to the documents in a failure.
	legend := func(out string) string {
		var b strings.Builder
		b.WriteString(out)
		for name, bl := range where {
			if strings.Contains(out, name+"/") {
				fmt.Fprintf(&b, "(%s/doc.go is the block at %s)\n", name, bl.where())
			}
		}
		return b.String()
	}
	if out, err := goCmd(5*time.Minute, "vet", "./..."); err != nil {
		return fmt.Errorf("the Go blocks do not compile or vet: %w\n%s", err, legend(out))
	}
	if len(mains) == 0 {
		return nil
	}
	// One go build links every program at once (in parallel, sharing the
	// compiled packages); each then runs from its binary.
	args := []string{"build", "-o", filepath.Join(dir, "bin") + string(filepath.Separator)}
	for _, name := range mains {
		args = append(args, "./"+name)
	}
	if out, err := goCmd(5*time.Minute, args...); err != nil {
		return fmt.Errorf("building the Go programs: %w\n%s", err, legend(out))
	}
	for _, name := range mains {
		c, cancel := context.WithTimeout(ctx, 2*time.Minute)
		cmd := exec.CommandContext(c, filepath.Join(dir, "bin", name))
		cmd.Dir = dir
		outb, err := cmd.CombinedOutput()
		cancel()
		out := string(outb)
		if err != nil {
			return fmt.Errorf("%s: the program failed: %w\n%s", where[name].where(), err, out)
		}
		if re := where[name].dir.output; re != nil && !re.MatchString(out) {
			return fmt.Errorf("%s: the output does not match %q:\n%s", where[name].where(), re, out)
		}
	}
	return nil
}
