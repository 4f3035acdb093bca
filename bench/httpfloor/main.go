// Command httpfloor is the floor under the single-job HTTP path's CPU per
// job (issue 39): a bare net/http server that answers POST /work the way a
// frontend does (read and decode the JSON body, answer 201 with the id)
// and does nothing else: no master, no journal, no worker. Driven by the
// same load generator as a frontend,
//
//	go run ./bench/httpfloor -listen 127.0.0.1:3790 &
//	foreman bench --to 127.0.0.1:3790 --results=false --jobs 60000 --cpu-of floor=PID
//
// its CPU per request is what HTTP/1.1 with one request per connection
// round trip costs on the machine (two syscalls and the server's own work
// per request), which no change behind the frontend can cut.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:3790", "host:port to serve on")
	flag.Parse()
	var n atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("POST /work", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
			http.Error(w, fmt.Sprintf(`{"error":%q}`, err.Error()), http.StatusBadRequest)
			return
		}
		if req.ID == "" {
			req.ID = "f-" + strconv.FormatInt(n.Add(1), 10)
		}
		body, _ := json.Marshal(struct {
			ID string `json:"id"`
		}{req.ID}) // a string field: never fails
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/work/"+req.ID)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	srv := &http.Server{Addr: *listen, Handler: mux}
	slog.Info("httpfloor serving", "listen", *listen)
	if err := srv.ListenAndServe(); err != nil {
		slog.Error("httpfloor", "error", err)
		os.Exit(1)
	}
}
