// Command pushpull measures the point of seed 000: the naive push version of
// the email campaign (the coordinator sends every recipient on to the email
// creator, which pipes each email to slow senders) against the work pulling
// version (actors/pulling), over the same creator and the same slow senders.
// Run each variant in its own process, so peak RSS (VmHWM) is its own:
//
//	go run ./examples/emailcampaign/pushpull -mode push -items 1000000
//	go run ./examples/emailcampaign/pushpull -mode pull -items 1000000
//
// It prints one line: mode, items, seconds, items/s, peak RSS, the largest
// number of messages queued for one actor (sent and not yet received), and
// the heap in use at the peak-queue moment's end.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/pulling"
)

type recipient struct {
	ID    int64
	Name  string
	Email string
}

// source is the Epic: recipients generated on demand (no table in memory).
type source struct {
	next, total int64
}

func (s *source) Next(_ context.Context, limit int) ([]recipient, error) {
	n := min(int64(limit), s.total-s.next)
	batch := make([]recipient, 0, n)
	for range n {
		s.next++
		batch = append(batch, recipient{ID: s.next, Name: fmt.Sprintf("Reader %d", s.next), Email: fmt.Sprintf("reader%d@example.com", s.next)})
	}
	return batch, nil
}

func (s *source) Remaining() int { return int(s.total - s.next) }

// queue counts messages sent to one actor and not yet received by it.
type queue struct{ n atomic.Int64 }

var maxQueued atomic.Int64

func (q *queue) enqueue() {
	v := q.n.Add(1)
	for {
		m := maxQueued.Load()
		if v <= m || maxQueued.CompareAndSwap(m, v) {
			return
		}
	}
}

func (q *queue) dequeue() { q.n.Add(-1) }

type job struct {
	r      recipient
	sender int
	done   func(error) // nil in push mode
}

type emailJob struct {
	body []byte
	done func(error)
}

var tmpl = template.Must(template.New("e").Parse(
	"From: Foreman <campaign@foreman.example>\r\nTo: {{.Name}} <{{.Email}}>\r\nSubject: News, {{.Name}}\r\n\r\n" +
		"Dear {{.Name}}, this month's newsletter is out. You are reader #{{.ID}}.\r\n"))

func main() {
	mode := flag.String("mode", "pull", "push or pull")
	items := flag.Int64("items", 1_000_000, "recipients to send to (1..10000000)")
	senders := flag.Int("senders", 16, "slow email senders (1..256)")
	delay := flag.Duration("send-delay", 100*time.Microsecond, "time one send takes")
	window := flag.Int("window", 1, "pull mode: items each worker holds")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pushpull:", err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "pushpull: cpu profile:", err)
			os.Exit(2)
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "pushpull: cpu profile:", err)
			}
		}()
	}
	if *items < 1 || *items > 10_000_000 || *senders < 1 || *senders > 256 || (*mode != "push" && *mode != "pull") {
		fmt.Fprintln(os.Stderr, "pushpull: want -mode push|pull, -items 1..10000000, -senders 1..256")
		os.Exit(2)
	}

	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer sys.Shutdown()
	root := sys.Root
	var sent atomic.Int64

	senderQ := make([]*queue, *senders)
	senderPIDs := make([]*actor.PID, *senders)
	for i := range senderPIDs {
		q := &queue{}
		senderQ[i] = q
		senderPIDs[i] = root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			if e, ok := c.Message().(*emailJob); ok {
				q.dequeue()
				time.Sleep(*delay) // the slow mail server
				sent.Add(1)
				if e.done != nil {
					e.done(nil)
				}
			}
		}))
	}
	creatorQ := &queue{}
	next := 0
	creator := root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		j, ok := c.Message().(*job)
		if !ok {
			return
		}
		creatorQ.dequeue()
		var buf bytes.Buffer
		_ = tmpl.Execute(&buf, j.r)
		s := j.sender
		if s < 0 { // push: round robin, as a router would
			s = next % len(senderPIDs)
			next++
		}
		senderQ[s].enqueue()
		c.Send(senderPIDs[s], &emailJob{body: buf.Bytes(), done: j.done})
	}))

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	epic := &source{total: *items}
	start := time.Now()
	switch *mode {
	case "push":
		// The seed's naive coordinator: case Go => batch foreach (creator ! work); if batch nonEmpty self ! Go.
		type goMsg struct{}
		coordinator := root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			if _, ok := c.Message().(*goMsg); ok {
				batch, _ := epic.Next(ctx, 1000)
				for _, r := range batch {
					creatorQ.enqueue()
					c.Send(creator, &job{r: r, sender: -1})
				}
				if len(batch) > 0 {
					c.Send(c.Self(), &goMsg{})
				}
			}
		}))
		root.Send(coordinator, &goMsg{})
		for sent.Load() < *items {
			if ctx.Err() != nil {
				fmt.Fprintln(os.Stderr, "pushpull: timeout")
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "pull":
		props, err := pulling.MasterProps[recipient](pulling.WithBatchSize(1000))
		if err != nil {
			panic(err)
		}
		master := root.Spawn(props)
		for i := range senderPIDs {
			wp, err := pulling.AsyncWorkerProps(master, func(_ context.Context, r recipient, done func(error)) {
				creatorQ.enqueue()
				root.Send(creator, &job{r: r, sender: i, done: done})
			}, pulling.WithWindow(*window))
			if err != nil {
				panic(err)
			}
			root.Spawn(wp)
		}
		st, err := pulling.Run(ctx, root, master, pulling.Epic[recipient](epic))
		if err != nil || st.Confirmed != uint64(*items) {
			fmt.Fprintf(os.Stderr, "pushpull: %v, stats %+v\n", err, st)
			return
		}
	}
	elapsed := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("mode=%s items=%d senders=%d send_delay=%s seconds=%.2f items_per_s=%.0f peak_rss_mib=%.1f max_queued=%d total_alloc_mib=%.0f\n",
		*mode, *items, *senders, *delay, elapsed.Seconds(), float64(*items)/elapsed.Seconds(),
		float64(vmHWM())/1024, maxQueued.Load(), float64(ms.TotalAlloc)/(1<<20))
}

// vmHWM returns the process's peak resident set size in KiB.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d", &kb); err != nil {
				return -1
			}
			return kb
		}
	}
	return -1
}
