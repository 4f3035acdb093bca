package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/messages"
)

// idsBackend accepts every submission and keeps the work ids it was given,
// so a test can show what would have been stored.
type idsBackend struct {
	mu  sync.Mutex
	ids []string
}

func (b *idsBackend) Submit(_ context.Context, w *messages.Work) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ids = append(b.ids, w.GetWorkId())
	return nil
}

func (b *idsBackend) WorkStatus(_ context.Context, id string) (*messages.WorkStatusReply, error) {
	return &messages.WorkStatusReply{WorkId: id}, nil
}

func (b *idsBackend) Status(context.Context) (*httpapi.StatusInfo, error) {
	return &httpapi.StatusInfo{}, nil
}

func (b *idsBackend) stored() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.ids...)
}

// startIDsServer serves an idsBackend on a real loopback port.
func startIDsServer(t *testing.T, opts ...httpapi.Option) (*idsBackend, *httpapi.Server) {
	t.Helper()
	be := &idsBackend{}
	srv, err := httpapi.New(be, append([]httpapi.Option{httpapi.WithAddr("127.0.0.1:0")}, opts...)...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(sctx))
	})
	return be, srv
}

// TestSubmitInvalidUTF8ID: a work id that is not valid UTF-8 is refused
// with 400 naming the byte offset, on the hand-written fast path (a small
// body of known length), the JSON decoder's path (a chunked body, a body
// over the fast path's size) and in both batch formats; nothing reaches
// the backend, where the id would be stored as U+FFFD.
func TestSubmitInvalidUTF8ID(t *testing.T) {
	t.Parallel()
	be, srv := startIDsServer(t)
	base := "http://" + srv.Addr()
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	// {"id":"ab\xffc",... : the bad byte is at offset 9.
	bad := "{\"id\":\"ab\xffc\",\"type\":\"square\",\"payload\":1}"
	pad := strings.Repeat("x", 5000)
	post := func(t *testing.T, path, ct string, body io.Reader) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, base+path, body)
		require.NoError(t, err)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(data)
	}
	for _, tc := range []struct {
		name, body string
		chunked    bool
	}{
		{name: "FastPath", body: bad},
		{name: "Chunked", body: bad, chunked: true},
		{name: "LargeBody", body: "{\"type\":\"square\",\"payload\":\"" + pad + "\",\"id\":\"\xc3\"}"},
		{name: "InType", body: "{\"type\":\"sq\xe2\x82\",\"id\":\"x\"}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rd io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				rd = io.MultiReader(rd) // unknown length: sent chunked
			}
			code, data := post(t, httpapi.PathWork, "application/json", rd)
			require.Equal(t, http.StatusBadRequest, code, data)
			offset := strings.IndexFunc(tc.body, func(r rune) bool { return r == utf8.RuneError })
			require.Contains(t, data, fmt.Sprintf("not valid UTF-8 at byte offset %d", offset))
		})
	}
	t.Run("Batch", func(t *testing.T) {
		good := `{"id":"good-1","type":"square","payload":2}`
		code, data := post(t, httpapi.PathWorkBatch, "application/json", strings.NewReader("["+good+","+bad+"]"))
		require.Equal(t, http.StatusMultiStatus, code, data)
		var resp httpapi.BatchResponse
		require.NoError(t, json.Unmarshal([]byte(data), &resp))
		require.Len(t, resp.Items, 2)
		require.Equal(t, http.StatusCreated, resp.Items[0].Status)
		require.Equal(t, http.StatusBadRequest, resp.Items[1].Status, resp.Items[1].Error)
		// The item starts at byte 2+len(good) of the body.
		require.Contains(t, resp.Items[1].Error, fmt.Sprintf("not valid UTF-8 at byte offset %d of the body (byte 9 of item 2)", 2+len(good)+9))
	})
	t.Run("NDJSON", func(t *testing.T) {
		code, data := post(t, httpapi.PathWorkBatch, httpapi.ContentTypeNDJSON, strings.NewReader(bad+"\n"))
		require.Equal(t, http.StatusMultiStatus, code, data)
		var resp httpapi.BatchResponse
		require.NoError(t, json.Unmarshal([]byte(data), &resp))
		require.Len(t, resp.Items, 1)
		require.Equal(t, http.StatusBadRequest, resp.Items[0].Status)
		require.Contains(t, resp.Items[0].Error, "not valid UTF-8 at byte offset 9 of the body (byte 9 of item 1)")
	})
	for _, id := range be.stored() {
		require.NotContains(t, id, "\uFFFD", "an invalid id was stored as U+FFFD")
	}
	require.Equal(t, []string{"good-1"}, be.stored())
}

// TestClientRefusesInvalidUTF8: the Go client's json.Marshal would turn
// the bad byte into U+FFFD and the server would accept it; the client
// refuses the request itself, naming the field and the byte offset, and
// sends nothing.
func TestClientRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	be, srv := startIDsServer(t)
	c, err := httpapi.NewClient(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := httpapi.SubmitRequest{ID: "ab\xffc", Type: "square", Payload: json.RawMessage("1")}
	check := func(err error, what string) {
		t.Helper()
		require.ErrorIs(t, err, httpapi.ErrInvalid, what)
		require.ErrorContains(t, err, `work id is not valid UTF-8 at byte offset 2`, what)
	}
	_, err = c.Submit(ctx, req)
	check(err, "Submit")
	_, _, err = c.SubmitWait(ctx, req, time.Second)
	check(err, "SubmitWait")
	sc, err := c.NewSubmitConn()
	require.NoError(t, err)
	_, err = sc.Submit(ctx, req)
	check(err, "SubmitConn.Submit")
	require.NoError(t, sc.Close())
	_, err = c.SubmitMany(ctx, []httpapi.SubmitRequest{{ID: "fine", Type: "square"}, req})
	check(err, "SubmitMany")
	require.ErrorContains(t, err, "item 2")
	_, err = c.Submit(ctx, httpapi.SubmitRequest{Type: "sq\xe2"})
	require.ErrorContains(t, err, `job type is not valid UTF-8 at byte offset 2`)
	require.Empty(t, be.stored(), "a request was sent")
}

// TestOversizedBodyAnswerReachesStreamingClient: a client that writes its
// whole 10 MiB body before reading the answer (Python's urllib does) gets
// the 413 JSON answer instead of a reset connection, for a body of declared
// length and for a chunked one; and the 400 of a body found malformed long
// before its end. The client here writes over a real TCP connection in
// 64 KiB pieces, spread over about two seconds, so that the server's close
// after its answer (500 ms later on main) comes while the client still
// writes.
func TestOversizedBodyAnswerReachesStreamingClient(t *testing.T) {
	t.Parallel()
	_, srv := startIDsServer(t)
	const size, piece = 10 << 20, 64 << 10
	for _, tc := range []struct {
		chunked   bool
		prefix    string
		code      int
		errorPart string
	}{
		{false, `{"type":"square","payload":"`, http.StatusRequestEntityTooLarge, "over the limit of 1048576"},
		{true, `{"type":"square","payload":"`, http.StatusRequestEntityTooLarge, "over the limit of 1048576"},
		{true, `{"type":"square","payload":x`, http.StatusBadRequest, "malformed JSON at byte 28"},
	} {
		chunked := tc.chunked
		t.Run(fmt.Sprintf("chunked=%v,%d", chunked, tc.code), func(t *testing.T) {
			t.Parallel()
			conn, err := net.DialTimeout("tcp", srv.Addr(), 10*time.Second)
			require.NoError(t, err)
			defer func() { _ = conn.Close() }()
			require.NoError(t, conn.SetDeadline(time.Now().Add(60*time.Second)))
			head := "POST /work HTTP/1.1\r\nHost: " + srv.Addr() + "\r\nContent-Type: application/json\r\n"
			if chunked {
				head += "Transfer-Encoding: chunked\r\n\r\n"
			} else {
				head += fmt.Sprintf("Content-Length: %d\r\n\r\n", size)
			}
			_, err = io.WriteString(conn, head)
			require.NoError(t, err)
			buf := bytes.Repeat([]byte("x"), piece)
			first := append([]byte(tc.prefix), buf[len(tc.prefix):]...)
			tick := time.NewTicker(2 * time.Second / (size / piece))
			defer tick.Stop()
			for sent := 0; sent < size; sent += piece {
				<-tick.C
				out := buf
				if sent == 0 {
					out = first
				}
				if chunked {
					out = append(append(fmt.Appendf(nil, "%x\r\n", piece), out...), "\r\n"...)
				}
				_, err := conn.Write(out)
				require.NoError(t, err, "writing the body (%d of %d bytes sent): the server reset the connection before the client could read its answer", sent, size)
			}
			if chunked {
				_, err = io.WriteString(conn, "0\r\n\r\n")
				require.NoError(t, err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err, "reading the answer")
			defer func() { _ = resp.Body.Close() }()
			data, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.code, resp.StatusCode, "%s", data)
			var eb struct{ Error string }
			require.NoError(t, json.Unmarshal(data, &eb), "the answer is JSON: %s", data)
			require.Contains(t, eb.Error, tc.errorPart)
		})
	}
}

// FuzzDecodeSubmitUTF8: a body that is not valid UTF-8 is never accepted,
// and when the refusal is for the UTF-8 it names the first bad byte,
// however the body arrives: whole, or one byte a read (a sequence split
// across reads).
func FuzzDecodeSubmitUTF8(f *testing.F) {
	for _, s := range []string{
		"{\"id\":\"ab\xffc\",\"type\":\"t\"}", "{\"type\":\"t\",\"payload\":\"\xe2\x82\xac\"}",
		"{\"type\":\"t\",\"payload\":\"\xe2\x82\"}", "{\"type\":\"t\"}\xe2", "{\"type\":\"\xf0\x9f\x98\x80\"}",
		"{\"type\":\"t\",\"id\":\"\xed\xa0\x80\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		whole, errWhole := httpapi.DecodeSubmit(bytes.NewReader(body))
		byByte, errByte := httpapi.DecodeSubmit(iotest.OneByteReader(bytes.NewReader(body)))
		require.Equal(t, errWhole == nil, errByte == nil, "whole: %v; byte by byte: %v", errWhole, errByte)
		if errWhole == nil {
			require.Equal(t, whole, byByte)
		}
		if utf8.Valid(body) {
			return
		}
		require.Error(t, errWhole, "a body that is not valid UTF-8 was accepted: %q", body)
		bad := 0
		for bad < len(body) {
			r, size := utf8.DecodeRune(body[bad:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			bad += size
		}
		for _, err := range []error{errWhole, errByte} {
			if ue := (*httpapi.UTF8Error)(nil); errors.As(err, &ue) {
				require.Equal(t, int64(bad), ue.Offset, "%q: %v", body, err)
				require.ErrorIs(t, err, httpapi.ErrInvalid)
			}
		}
	})
}
