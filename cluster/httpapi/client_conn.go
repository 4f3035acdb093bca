package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/foreman-actors/foreman/actors/tracing"
)

// SubmitConn posts jobs one after another (POST /work) on one keep-alive
// HTTP/1.1 connection of its own, for load generators: it writes each
// request from one reused buffer and reads the answer on the caller's
// goroutine, where the Client's transport hands every request to a writer
// and a reader goroutine per connection (three goroutine switches and a
// cloned request per job, which on this project's 2-core benchmark machine
// cost about as much CPU as the frontend's own handler). The answers are
// Submit's: the work id once durable, 503 retried after Retry-After with
// the same id, an *APIError or a transport error otherwise.
//
// A SubmitConn is not safe for concurrent use: give every submitter its own
// (they share nothing). Close it when done.
type SubmitConn struct {
	c      *Client
	addr   string      // host:port to dial
	host   string      // the Host header
	tlsCfg *tls.Config // nil: plain HTTP
	dialer net.Dialer

	conn net.Conn      // nil until the first request, or after an error
	br   *bufio.Reader // reads conn
	buf  []byte        // the request being written, reused
}

// NewSubmitConn returns a SubmitConn to the Client's server; it dials on
// the first Submit. It fails with ErrInvalidOption for a Client made
// WithHTTPClient: such a client's transport (proxy, dialer, TLS) is not
// known here.
func (c *Client) NewSubmitConn() (*SubmitConn, error) {
	if !c.ownTransport {
		return nil, fmt.Errorf("%w: NewSubmitConn dials the server itself and cannot honour a Client made WithHTTPClient", ErrInvalidOption)
	}
	u, err := url.Parse(c.base)
	if err != nil { // cannot happen: NewClient checked it
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	s := &SubmitConn{c: c, host: u.Host, addr: u.Host}
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		s.addr = net.JoinHostPort(u.Hostname(), port)
	}
	if u.Scheme == "https" {
		s.tlsCfg = c.tlsCfg.Clone()
		if s.tlsCfg == nil {
			s.tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if s.tlsCfg.ServerName == "" {
			s.tlsCfg.ServerName = u.Hostname()
		}
		s.tlsCfg.NextProtos = []string{"http/1.1"}
	}
	return s, nil
}

// Close closes the connection, if open.
func (s *SubmitConn) Close() error {
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn, s.br = nil, nil
	return err
}

// Submit posts req and returns the work id once the work is durable, as
// [Client.Submit] does (an id is generated before the first attempt when
// req has none; 503 answers are retried after Retry-After until ctx ends).
func (s *SubmitConn) Submit(ctx context.Context, req SubmitRequest) (string, error) {
	return s.c.submit(ctx, req, s.post)
}

// post sends one request with body and reads its answer. A connection the
// server closed while idle is dialled again and the request sent again
// (the same id: the job runs once), as the Client's transport does.
func (s *SubmitConn) post(ctx context.Context, body []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	reused := s.conn != nil
	code, h, data, err := s.roundTrip(ctx, body)
	if err != nil && reused && ctx.Err() == nil && errors.Is(err, errStaleConn) {
		code, h, data, err = s.roundTrip(ctx, body)
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("httpapi: POST %s: %w", PathWork, ctx.Err())
		}
		return "", fmt.Errorf("httpapi: cannot reach %s (is a frontend node running there? pick one with --to): %w", s.c.base, err)
	}
	if code != http.StatusCreated && code != http.StatusOK { // 200: a duplicate by unique key
		return "", apiError(code, h, data)
	}
	var resp SubmitResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return "", fmt.Errorf("%w: the answer to POST %s is not the expected JSON: %w", ErrServer, PathWork, err)
	}
	return resp.ID, nil
}

// errStaleConn marks a kept connection that failed before any byte of the
// answer arrived: the server closed it while idle.
var errStaleConn = errors.New("httpapi: the kept connection was closed by the server")

// roundTrip writes one POST /work with body and reads the answer: status
// code, header and body. Any error closes the connection.
func (s *SubmitConn) roundTrip(ctx context.Context, body []byte) (code int, h http.Header, data []byte, err error) {
	if s.conn == nil {
		if err := s.dial(ctx); err != nil {
			return 0, nil, nil, err
		}
	}
	conn := s.conn // the func may run after Close cleared s.conn
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if !stop() || err != nil { // ctx ended: the deadline may be in the past
			_ = s.Close()
		}
	}()
	s.buf = s.request(s.buf[:0], body, tracing.Parent(ctx))
	if _, err := s.conn.Write(s.buf); err != nil {
		return 0, nil, nil, fmt.Errorf("%w: %w", errStaleConn, err)
	}
	if _, err := s.br.Peek(1); err != nil {
		return 0, nil, nil, fmt.Errorf("%w: %w", errStaleConn, err)
	}
	if a, ok := s.plainAnswer(); ok {
		data = make([]byte, a.length)
		if _, err := io.ReadFull(s.br, data); err != nil {
			return 0, nil, nil, fmt.Errorf("reading the answer to POST %s: %w", PathWork, err)
		}
		if a.close {
			_ = s.Close() // the server closes it after this answer
		}
		return a.code, a.header, data, nil
	}
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	_ = resp.Body.Close()
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading the answer to POST %s: %w", PathWork, err)
	}
	if resp.Close {
		_ = s.Close() // the server closes it after this answer
	}
	return resp.StatusCode, resp.Header, data, nil
}

// answerHead is the head of a plain answer: status, body length, and what
// the client reads from the header.
type answerHead struct {
	code   int
	length int
	close  bool
	header http.Header // Retry-After only; nil without
}

// plainAnswer reads the head of the answer when it is a plain HTTP/1.1
// one (status line, a Content-Length, no Transfer-Encoding, all in the
// read buffer): it consumes the head and leaves the body. ok is false,
// and nothing is consumed, for anything else; http.ReadResponse then
// reads it. net/http's header parsing was a tenth of a load generator's
// CPU; the API's answers to POST /work are all plain.
func (s *SubmitConn) plainAnswer() (a answerHead, ok bool) {
	var head []byte
	for {
		buf, _ := s.br.Peek(s.br.Buffered())
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			head = buf[:i+2]
			break
		}
		if s.br.Buffered() == s.br.Size() {
			return a, false // a head larger than the buffer
		}
		if _, err := s.br.Peek(s.br.Buffered() + 1); err != nil {
			return a, false // ReadResponse reports it
		}
	}
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) || (len(line) > 12 && line[12] != ' ') {
		return a, false
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil || code < 200 {
		return a, false
	}
	a.code, a.length = code, -1
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		k, v, found := bytes.Cut(line, []byte(":"))
		if !found {
			return a, false
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			n, err := strconv.Atoi(string(v))
			if err != nil || n < 0 || n > maxAnswerBytes || a.length >= 0 {
				return a, false
			}
			a.length = n
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			return a, false
		case bytes.EqualFold(k, []byte("Connection")):
			a.close = a.close || bytes.EqualFold(v, []byte("close"))
		case bytes.EqualFold(k, []byte("Retry-After")):
			a.header = http.Header{"Retry-After": {string(v)}}
		}
	}
	if a.length < 0 {
		return a, false
	}
	_, _ = s.br.Discard(len(head) + 2)
	return a, true
}

func (s *SubmitConn) dial(ctx context.Context) error {
	conn, err := s.dialer.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return err
	}
	if s.tlsCfg != nil {
		tc := tls.Client(conn, s.tlsCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return err
		}
		conn = tc
	}
	s.conn, s.br = conn, bufio.NewReader(conn)
	return nil
}

// request appends the bytes of POST /work with body to b.
func (s *SubmitConn) request(b, body []byte, traceParent string) []byte {
	b = append(b, "POST "+PathWork+" HTTP/1.1\r\nHost: "...)
	b = append(b, s.host...)
	b = append(b, "\r\nContent-Type: application/json\r\nAccept: application/json\r\n"...)
	if s.c.token != "" {
		b = append(b, "Authorization: Bearer "...)
		b = append(b, s.c.token...)
		b = append(b, "\r\n"...)
	}
	if traceParent != "" {
		b = append(b, traceParentHeader+": "...)
		b = append(b, traceParent...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}
