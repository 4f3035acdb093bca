package httpapi_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// BenchmarkSubmit measures POST /work end to end over loopback: HTTP, the
// frontend client, the real master and a durable journal append per
// acknowledgement (no workers, so only the accept path is measured).
func BenchmarkSubmit(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a node and a server")
	}
	for _, jr := range []string{"memory", "sqlite"} {
		for _, par := range []int{1, 32} {
			b.Run(fmt.Sprintf("journal=%s/clients=%d", jr, par), func(b *testing.B) {
				opts := []stackOption{withWorkers(0)}
				if jr == "sqlite" {
					opts = append(opts, withSQLite())
				}
				s := startStack(b, opts...)
				c := s.client(b)
				var seq atomic.Int64
				submit := func() error {
					id := fmt.Sprintf("b-%d", seq.Add(1))
					_, err := c.Submit(b.Context(), httpapi.SubmitRequest{ID: id, Type: "square", Payload: json.RawMessage("7")})
					return err
				}
				b.ReportAllocs()
				b.ResetTimer()
				if par == 1 {
					for b.Loop() {
						if err := submit(); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.SetParallelism(max(1, par/runtime.GOMAXPROCS(0)))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := submit(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			})
		}
	}
}

// BenchmarkDecodeSubmit measures parsing and validating one POST /work body.
func BenchmarkDecodeSubmit(b *testing.B) {
	body := `{"id":"0123456789abcdef0123456789abcdef","type":"square","payload":{"n":7,"tags":["a","b"]}}`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := httpapi.DecodeSubmit(strings.NewReader(body)); err != nil {
			b.Fatal(err)
		}
	}
}
