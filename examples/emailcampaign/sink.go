package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of the SMTP sink.
const (
	sinkMaxConns    = 256
	sinkIdleTimeout = 30 * time.Second
)

// Sink is a minimal SMTP server on 127.0.0.1 that accepts every message and
// counts it: enough for net/smtp (EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT),
// no TLS, no AUTH. It lets the example run without a mail server.
type Sink struct {
	ln       net.Listener
	wg       sync.WaitGroup
	received atomic.Int64
	slots    chan struct{}
	latency  time.Duration // added to every DATA, as a slow mail server's

	mu    sync.Mutex // guards conns and rcpts
	conns map[net.Conn]struct{}
	rcpts map[string]int
}

// StartSink listens on a free loopback port.
func StartSink() (*Sink, error) { return StartSinkWithLatency(0) }

// StartSinkWithLatency is StartSink with a server that takes latency to
// accept each message, so that senders, not the CPU, are the bottleneck.
func StartSinkWithLatency(latency time.Duration) (*Sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("emailcampaign: start smtp sink: %w", err)
	}
	s := &Sink{ln: ln, slots: make(chan struct{}, sinkMaxConns), conns: map[net.Conn]struct{}{}, rcpts: map[string]int{}, latency: latency}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the sink's host:port.
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// Received is the number of messages accepted so far.
func (s *Sink) Received() int64 { return s.received.Load() }

// Distinct is the number of distinct recipients seen.
func (s *Sink) Distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rcpts)
}

// Close stops the sink and waits for its connections to end.
func (s *Sink) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Sink) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		select {
		case s.slots <- struct{}{}:
		default:
			_, _ = fmt.Fprint(c, "421 too many connections\r\n")
			_ = c.Close()
			continue
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.slots }()
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			_ = c.Close()
		}()
	}
}

func (s *Sink) serve(c net.Conn) {
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	reply := func(line string) bool {
		_, _ = w.WriteString(line + "\r\n")
		return w.Flush() == nil
	}
	if !reply("220 sink.local ESMTP foreman emailcampaign sink") {
		return
	}
	var rcpts []string
	for {
		_ = c.SetReadDeadline(time.Now().Add(sinkIdleTimeout))
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		verb, _, _ := strings.Cut(cmd, " ")
		var ok bool
		switch verb {
		case "EHLO":
			ok = reply("250-sink.local\r\n250-8BITMIME\r\n250 SIZE 1048576")
		case "HELO", "NOOP":
			ok = reply("250 ok")
		case "RSET", "MAIL":
			rcpts = rcpts[:0]
			ok = reply("250 ok")
		case "RCPT":
			_, addr, _ := strings.Cut(strings.TrimSpace(line), ":")
			rcpts = append(rcpts, strings.Trim(strings.TrimSpace(addr), "<>"))
			ok = reply("250 ok")
		case "DATA":
			if !reply("354 end with <CRLF>.<CRLF>") {
				return
			}
			if err := readData(r); err != nil {
				return
			}
			if s.latency > 0 {
				time.Sleep(s.latency)
			}
			s.received.Add(1)
			s.mu.Lock()
			for _, a := range rcpts {
				s.rcpts[a]++
			}
			s.mu.Unlock()
			rcpts = rcpts[:0]
			ok = reply("250 queued")
		case "QUIT":
			reply("221 bye")
			return
		default:
			ok = reply("502 command not implemented")
		}
		if !ok {
			return
		}
	}
}

var errTooLarge = errors.New("message too large")

func readData(r *bufio.Reader) error {
	size := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if line == ".\r\n" || line == ".\n" {
			return nil
		}
		if size += len(line); size > 1<<20 {
			return errTooLarge
		}
	}
}
