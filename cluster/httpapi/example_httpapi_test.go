package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/node"
)

// Example serves the HTTP API of an all-in-one node (master, one worker,
// in-memory journal) on a free loopback port and uses it with the Go client.
func Example() {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	j := journal.NewMemory()
	defer func() { printErr("journal close", j.Close()) }()
	n, err := node.StartLocal(ctx, node.WithJournal(j), node.WithWorkers(1), node.WithSquareDelay(0, 0), node.WithLogger(quiet))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { printErr("node stop", n.Stop(ctx)) }()

	backend, _ := httpapi.NewActorBackend(n.Client(), httpapi.LocalMembers(n.System()))
	srv, _ := httpapi.New(backend, httpapi.WithAddr("127.0.0.1:0"), httpapi.WithLogger(quiet))
	if err := srv.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { printErr("server shutdown", srv.Shutdown(ctx)) }()

	c, _ := httpapi.NewClient(srv.Addr())
	defer c.CloseIdleConnections()
	id, err := c.Submit(ctx, httpapi.SubmitRequest{ID: "job-1", Type: "square", Payload: json.RawMessage("7")})
	fmt.Println("accepted", id, err)
	info, err := c.Wait(ctx, id, 10*time.Millisecond)
	fmt.Println(info.Status, string(info.Result), info.Attempts, err)
	st, _ := c.Status(ctx)
	fmt.Println(st.Members[0].Roles, st.Master.Reachable, st.Queue.Done)
	// Output:
	// accepted job-1 <nil>
	// done 49 1 <nil>
	// [all] true 1
}

// Example_rawHTTP shows the wire format with plain net/http, as curl would
// see it.
func Example_rawHTTP() {
	addr, stop, err := exampleServer(context.Background(), 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	base := "http://" + addr
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	show := func(resp *http.Response, err error) {
		if err != nil {
			fmt.Println(err)
			return
		}
		body, err := io.ReadAll(resp.Body)
		printErr("read body", err)
		printErr("close body", resp.Body.Close())
		fmt.Print(resp.StatusCode, " ", string(body))
	}
	show(hc.Post(base+"/work", "application/json", strings.NewReader(`{"id":"w-1","type":"square","payload":7}`)))
	show(hc.Post(base+"/work", "application/json", strings.NewReader(`{"payload":7}`)))
	show(hc.Get(base + "/work/w-1"))
	show(hc.Get(base + "/work/w-2"))
	// Output:
	// 201 {"id":"w-1"}
	// 400 {"error":"missing \"type\": set it to a job type the workers run, e.g. {\"type\":\"square\",\"payload\":7}"}
	// 200 {"id":"w-1","status":"accepted","type":"square","result":null,"attempts":0}
	// 404 {"error":"work \"w-2\" is unknown: never accepted, or done and forgotten after the master's retention"}
}

// exampleServer starts what Example wires by hand, for the examples that
// are about something else: an all-in-one node on an in-memory journal with
// the given number of workers, and its HTTP API on a free loopback port.
// stop shuts both down, printing any error.
func exampleServer(ctx context.Context, workers int) (addr string, stop func(), err error) {
	quiet := slog.New(slog.DiscardHandler)
	j := journal.NewMemory()
	n, err := node.StartLocal(ctx, node.WithJournal(j), node.WithWorkers(workers), node.WithSquareDelay(0, 0), node.WithLogger(quiet))
	if err != nil {
		printErr("journal close", j.Close())
		return "", nil, err
	}
	var srv *httpapi.Server
	backend, err := httpapi.NewActorBackend(n.Client(), httpapi.LocalMembers(n.System()))
	if err == nil {
		srv, err = httpapi.New(backend, httpapi.WithAddr("127.0.0.1:0"), httpapi.WithLogger(quiet))
	}
	if err == nil {
		err = srv.Start(ctx)
	}
	if err != nil {
		printErr("node stop", n.Stop(ctx))
		printErr("journal close", j.Close())
		return "", nil, err
	}
	return srv.Addr(), func() {
		printErr("server shutdown", srv.Shutdown(ctx))
		printErr("node stop", n.Stop(ctx))
		printErr("journal close", j.Close())
	}, nil
}

// printErr prints a failed clean-up, so that it shows up in the examples'
// checked output instead of going unnoticed.
func printErr(what string, err error) {
	if err != nil {
		fmt.Println(what+":", err)
	}
}

// ExampleClient_NewSubmitGroup submits jobs from many goroutines through
// one SubmitGroup: the calls made while its requests are out travel
// together in POST /work/batch, and each gets its own job's answer.
func ExampleClient_NewSubmitGroup() {
	ctx := context.Background()
	addr, stop, err := exampleServer(ctx, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	c, _ := httpapi.NewClient(addr)
	defer c.CloseIdleConnections()
	group := c.NewSubmitGroup(0) // DefaultSubmitGroupsInFlight requests out at once
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := group.Submit(ctx, httpapi.SubmitRequest{ID: fmt.Sprint("g-", i), Type: "square", Payload: json.RawMessage(fmt.Sprint(i))})
			if err != nil {
				fmt.Println(err)
				return
			}
			ids[i] = resp.ID
		}()
	}
	wg.Wait()
	info, err := c.Wait(ctx, ids[7], 10*time.Millisecond)
	fmt.Println(ids, info.Status, string(info.Result), err)
	// Output:
	// [g-0 g-1 g-2 g-3 g-4 g-5 g-6 g-7] done 49 <nil>
}
