package core

import (
	"strconv"
	"testing"
	"time"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// BenchmarkSubmitKeys is the cost of a submission in the core (Step of a
// Submit, its Append made durable) without keys, with a fresh unique key,
// with a unique key another job holds (answered as a duplicate, nothing
// journaled), and with a concurrency key.
func BenchmarkSubmitKeys(b *testing.B) {
	for _, bc := range []struct {
		name string
		work func(i int) *messages.Work
	}{
		{"plain", func(i int) *messages.Work { return work("j"+strconv.Itoa(i), nil) }},
		{"unique", func(i int) *messages.Work {
			return uniqueWork("j"+strconv.Itoa(i), "k"+strconv.Itoa(i), time.Hour, nil)
		}},
		{"duplicate", func(i int) *messages.Work { return uniqueWork("j"+strconv.Itoa(i), "held", time.Hour, nil) }},
		{"concurrency", func(i int) *messages.Work { return keyedWork("j"+strconv.Itoa(i), "tenant-"+strconv.Itoa(i%16)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := New(testConfig())
			m.Reset(NewWorkState())
			now := t0
			m.Step(now, Serving{Until: forever})
			m.Step(now, Recovered{})
			for _, e := range m.Step(now, Submit{From: frontend, Work: uniqueWork("holder", "held", time.Hour, nil)}) {
				if a, ok := e.(effect.Append); ok && a.Token != 0 {
					m.Step(now, effect.Durable{Token: a.Token})
				}
			}
			works := make([]*messages.Work, b.N)
			for i := range works {
				works[i] = bc.work(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				for _, e := range m.Step(now, Submit{From: frontend, Work: works[i]}) {
					if a, ok := e.(effect.Append); ok && a.Token != 0 {
						m.Step(now, effect.Durable{Token: a.Token})
					}
				}
			}
		})
	}
}
