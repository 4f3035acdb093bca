// Command throttler is seed 002's scenario: a web service allows at most
// -rate requests per -per ("10 requests a minute", scaled down to 10 per
// second), and an application throttles its HTTP requests to stay under that
// limit.
//
// It starts a local test server on 127.0.0.1, sends -requests requests
// through a throttler actor to an HTTP-calling actor, waits for every
// answer, then prints how many requests the server saw in each period and in
// its busiest window of length -per.
//
//	go run ./examples/throttler -requests 30 -rate 10 -per 1s -mode sliding_window
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/throttler"
)

func main() {
	var cfg config
	var mode string
	flag.IntVar(&cfg.requests, "requests", 30, "number of HTTP requests to make (1-10000)")
	flag.IntVar(&cfg.rate, "rate", 10, "requests allowed per period")
	flag.DurationVar(&cfg.per, "per", time.Second, "length of the period")
	flag.StringVar(&mode, "mode", "timer", "throttler mode: timer, sliding_window or token_bucket")
	flag.IntVar(&cfg.burst, "burst", 1, "token_bucket only: requests allowed at once")
	flag.Parse()
	m, err := throttler.ParseMode(mode)
	if err != nil {
		fmt.Fprintln(os.Stderr, "throttler:", err)
		os.Exit(2)
	}
	cfg.mode = m
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "throttler:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.deadline())
	defer cancel()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "throttler:", err)
		os.Exit(1)
	}
}

type config struct {
	requests int
	rate     int
	per      time.Duration
	mode     throttler.Mode
	burst    int
}

func (c config) validate() error {
	switch {
	case c.requests < 1 || c.requests > 10_000:
		return fmt.Errorf("-requests %d: want 1 to 10000", c.requests)
	case c.rate < 1:
		return fmt.Errorf("-rate %d: want at least 1", c.rate)
	case c.per < time.Millisecond || c.per > time.Minute:
		return fmt.Errorf("-per %s: want 1ms to 1m", c.per)
	case c.burst < 1:
		return fmt.Errorf("-burst %d: want at least 1", c.burst)
	case c.burst > 1 && c.mode != throttler.ModeTokenBucket:
		return fmt.Errorf("-burst %d needs -mode token_bucket", c.burst)
	}
	return nil
}

// deadline bounds the run: twice the time the requests need at the rate,
// plus 10 s.
func (c config) deadline() time.Duration {
	periods := c.requests/c.rate + 2
	return 2*time.Duration(periods)*c.per + 10*time.Second
}

// fetch asks the caller actor to make request n.
type fetch struct{ n int }

// fetched is the caller's answer to the original sender of a fetch.
type fetched struct {
	n      int
	status int
	err    error
}

// server is the rate-limited web service: it records when each request
// arrived.
type server struct {
	mu       sync.Mutex
	arrivals []time.Time // guarded by mu
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("n") != "0" { // n=0 is the connection warm-up
		s.mu.Lock()
		s.arrivals = append(s.arrivals, time.Now())
		s.mu.Unlock()
	}
	_, _ = io.WriteString(w, "ok "+r.URL.Query().Get("n"))
}

func (s *server) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]time.Time(nil), s.arrivals...)
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// caller makes the HTTP request of each fetch and answers its sender. The
// throttler keeps the original sender, so the answer goes straight to the
// future that asked.
func caller(client *http.Client, url string) actor.ReceiveFunc {
	return func(c actor.Context) {
		f, ok := c.Message().(*fetch)
		if !ok {
			return
		}
		res := &fetched{n: f.n}
		resp, err := client.Get(url + "?n=" + strconv.Itoa(f.n))
		if err != nil {
			res.err = err
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			res.status = resp.StatusCode
		}
		c.Respond(res)
	}
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	srv := &server{}
	ts := httptest.NewServer(srv) // listens on 127.0.0.1
	defer ts.Close()
	client := ts.Client()
	client.Timeout = 10 * time.Second
	// Open the connection first, so that the first throttled request does
	// not carry the connection set-up and bunch the others up behind it.
	warm, err := client.Get(ts.URL + "?n=0")
	if err != nil {
		return fmt.Errorf("warming up the connection to the test server: %w", err)
	}
	_, _ = io.Copy(io.Discard, warm.Body)
	_ = warm.Body.Close()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger }))
	defer system.Shutdown()

	target := system.Root.Spawn(actor.PropsFromFunc(caller(client, ts.URL)))
	rate := throttler.Rate{Calls: cfg.rate, Per: cfg.per}
	opts := []throttler.Option{throttler.WithTarget(target), throttler.WithMode(cfg.mode), throttler.WithLogger(logger)}
	if cfg.mode == throttler.ModeTokenBucket {
		opts = append(opts, throttler.WithBurst(cfg.burst))
	}
	props, err := throttler.Props(rate, opts...)
	if err != nil {
		return err
	}
	thr := system.Root.Spawn(props)
	defer system.Root.Stop(thr)

	if _, err := fmt.Fprintf(out, "%d requests at %s (mode %s) to %s\n", cfg.requests, rate, cfg.mode, ts.URL); err != nil {
		return err
	}
	start := time.Now()
	futures := make([]*actor.Future, cfg.requests)
	timeout := time.Until(deadlineOf(ctx))
	for i := range futures {
		futures[i] = system.Root.RequestFuture(thr, &fetch{n: i + 1}, timeout)
	}
	for i, f := range futures {
		res, err := f.Result()
		if err != nil {
			return fmt.Errorf("request %d: no answer: %w", i+1, err)
		}
		r := res.(*fetched)
		if r.err != nil {
			return fmt.Errorf("request %d: %w", r.n, r.err)
		}
		if r.status != http.StatusOK {
			return fmt.Errorf("request %d: the test server answered %d", r.n, r.status)
		}
	}
	elapsed := time.Since(start)
	return report(out, cfg, start, srv.times(), elapsed)
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}

// report prints the requests the server saw per period (counted from start,
// when the requests were handed to the throttler) and in its busiest window
// of length per. It returns the first failed write to out.
func report(out io.Writer, cfg config, start time.Time, arrivals []time.Time, elapsed time.Duration) error {
	var werr error
	printf := func(format string, args ...any) {
		if _, err := fmt.Fprintf(out, format, args...); err != nil && werr == nil {
			werr = err
		}
	}
	if len(arrivals) == 0 {
		return nil
	}
	counts := map[int]int{}
	last := 0
	for _, a := range arrivals {
		p := int(a.Sub(start) / cfg.per)
		counts[p]++
		last = max(last, p)
	}
	for p := 0; p <= last; p++ {
		printf("period %2d: %3d requests\n", p+1, counts[p])
	}
	busiest := 0
	for i := range arrivals {
		n := 0
		for _, b := range arrivals[i:] {
			if b.Sub(arrivals[i]) < cfg.per {
				n++
			}
		}
		busiest = max(busiest, n)
	}
	verdict := "within the limit"
	switch {
	case busiest > cfg.rate && cfg.mode == throttler.ModeTimer:
		verdict = "OVER the limit: the timer mode bounds only its own periods, and request latency moves start times (seed 002's caveats); try -mode sliding_window"
	case busiest > cfg.rate:
		verdict = "OVER the limit: request latency moved the start times that the throttler spaced (seed 002's first caveat)"
	}
	printf("busiest window of %s at the server: %d requests (limit %d): %s\n", cfg.per, busiest, cfg.rate, verdict)
	if last > 0 {
		// Every period but the last is saturated by the backlog.
		full := len(arrivals) - counts[last]
		printf("achieved %.1f requests per %s over the %d saturated periods (configured %d)\n",
			float64(full)/float64(last), cfg.per, last, cfg.rate)
	}
	printf("all %d requests answered in %s\n", len(arrivals), elapsed.Round(time.Millisecond))
	return werr
}
