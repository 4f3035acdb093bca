package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/node"
)

// browserEnv is set to "require" by CI: a missing chromium fails the test
// instead of skipping it.
const browserEnv = "FOREMAN_TEST_BROWSER"

// findChromium returns Debian's chromium, or skips (fails under CI).
func findChromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("FOREMAN_CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	msg := "SKIPPING the browser test: no chromium found (apt-get install chromium, or set FOREMAN_CHROMIUM)"
	if os.Getenv(browserEnv) == "require" {
		t.Fatal(msg + "; " + browserEnv + "=require")
	}
	t.Skip(msg)
	return ""
}

// artifactDir is where screenshots go: $FOREMAN_TEST_ARTIFACTS, else a new
// temporary directory (kept, and logged, so that they can be looked at).
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("FOREMAN_TEST_ARTIFACTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	d, err := os.MkdirTemp("", "foreman-dashboard-") //nolint:usetesting // kept after the test, so the screenshots can be looked at
	require.NoError(t, err)
	return d
}

// TestDashboardInBrowser drives Debian's chromium, headless, against a real
// node: the page loads without console errors, a submitted job is seen
// moving to done in the lookup with its history, and the Re-submit button of
// a dead job makes it run again to done.
func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	m := metrics.New()
	rates := &rateCalls{list: []httpapi.RateInfo{{Type: "square", Rate: "20/s", Calls: 20, Per: "1s", Mode: httpapi.RateModeStrict, Node: "127.0.0.1:2551", Queued: 3, Granted: 1234, Refused: 5}}}
	s := startStack(t, withWorkers(2), withServer(httpapi.WithMetrics(m), httpapi.WithRateAdmin(rates)),
		withNode(node.WithRegistry(flakyRegistry(t)), node.WithMetrics(m), node.WithMasterOptions(master.WithMaxAttempts(3))))
	shots := artifactDir(t)
	// A fresh profile; chromium may still write to it as it exits, so it
	// is removed without t.TempDir's check.
	profile, err := os.MkdirTemp("", "foreman-chromium-") //nolint:usetesting // chromium may still write to it as it exits; t.TempDir would fail the test
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(profile) })

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1366, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancel := context.WithTimeout(ctx, 15*testkit.Timeout())
	defer cancel()

	var (
		mu       sync.Mutex
		problems []string
	)
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, "console."+string(ev.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Error())
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.LevelError {
				problems = append(problems, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		}
	})
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var png []byte
			if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
				return err
			}
			path := filepath.Join(shots, name+".png")
			t.Logf("screenshot %s", path)
			return os.WriteFile(path, png, 0o644)
		})
	}

	// Some traffic first, so the page has something to show.
	for i := range 20 {
		a := s.do(t, http.MethodPost, httpapi.PathWork, fmt.Sprintf(`{"id":"warm%d","type":"square","payload":%d}`, i, i))
		require.Equal(t, http.StatusCreated, a.code, a.raw)
	}
	// Every request the page makes is slowed by 250 ms, as on a loaded CI
	// machine, where a poll of the page takes more than its 2 s interval.
	// Nothing below may then rely on how long a poll takes.
	require.NoError(t, chromedp.Run(ctx,
		network.Enable(),
		network.EmulateNetworkConditions(false, 250, -1, -1),
		chromedp.Navigate(s.base+httpapi.PathUI),
		chromedp.WaitReady(`#members`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelectorAll("#members td").length > 0`, nil),
		chromedp.Poll(`Number(document.body.dataset.polls || 0) >= 2`, nil),
	), "the dashboard loads and polls")
	var master string
	require.NoError(t, chromedp.Run(ctx, chromedp.Text(`#master`, &master, chromedp.ByQuery)))
	require.Contains(t, master, "Master at")

	// The rate-limits panel shows each throttler as GET /rates reports it.
	var panel string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Poll(`document.querySelectorAll("#rates td").length === 7`, nil),
		chromedp.Text(`#rates`, &panel, chromedp.ByQuery),
	), "the rates panel fills")
	require.Equal(t, "square 20/s strict 127.0.0.1:2551 3 1234 5", strings.Join(strings.Fields(panel), " "))

	// A submitted job, looked up by id, is seen reaching done with its
	// history.
	a := s.do(t, http.MethodPost, httpapi.PathWork, `{"id":"job-1","type":"square","payload":12}`)
	require.Equal(t, http.StatusCreated, a.code, a.raw)
	var history string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#lookup-id`, "job-1", chromedp.ByQuery),
		chromedp.Click(`#lookup button`, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("job").dataset.status === "done"`, nil),
		chromedp.Text(`#job`, &history, chromedp.ByQuery),
	))
	require.Contains(t, history, "completed")
	require.Contains(t, history, "Result: 144")

	// A dead job appears with a Re-submit button, which runs it again.
	a = s.do(t, http.MethodPost, httpapi.PathWork, `{"id":"flaky-1","type":"flaky","payload":"x"}`)
	require.Equal(t, http.StatusCreated, a.code, a.raw)
	btn := `#dead button[data-id="flaky-1"]`
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Poll(`document.querySelector('#dead button[data-id="flaky-1"]') !== null`, nil),
		shot("dashboard-dead"),
		chromedp.Click(btn, chromedp.ByQuery, chromedp.NodeVisible),
		chromedp.Poll(`document.getElementById("job").dataset.status === "done" && document.getElementById("job").textContent.includes("flaky-1")`, nil),
		chromedp.Text(`#job`, &history, chromedp.ByQuery),
	), "re-submit from the page")
	require.Contains(t, history, "flaky-1")
	require.Contains(t, history, "dead")
	// The dead list is refreshed by the page's poll loop, not by the lookup.
	// A poll that starts after the job was seen done must show the list
	// empty: the poll count moves twice before one such poll has ended (the
	// first move may be a poll already under way).
	var polls int
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`Number(document.body.dataset.polls || 0)`, &polls)))
	var nodes []*cdp.Node
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Poll(fmt.Sprintf(`Number(document.body.dataset.polls || 0) >= %d`, polls+2), nil),
		chromedp.Nodes(`#dead button`, &nodes, chromedp.ByQueryAll, chromedp.AtLeast(0)),
		shot("dashboard"),
	))
	require.Empty(t, nodes, "the re-submitted job left the dead list")
	if out := os.Getenv("FOREMAN_DASHBOARD_PNG"); out != "" {
		png, err := os.ReadFile(filepath.Join(shots, "dashboard.png"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(out, png, 0o644))
	}

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, problems, "the page logged errors")
}
