package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
)

// smallBody is the largest POST /work body read into a pooled buffer and
// scanned without reflection (decodeSubmitBytes); larger ones, and bodies
// of unknown length, are decoded from the stream (DecodeSubmit).
const smallBody = 4096

var smallBodies = sync.Pool{New: func() any { return new([smallBody]byte) }}

// decodeSubmitBody is DecodeSubmit(r.Body) with the same answers for every
// body; a small body of known length is read whole first and decoded by
// decodeSubmitBytes.
func decodeSubmitBody(r *http.Request) (SubmitRequest, error) {
	size := r.ContentLength
	if size <= 0 || size > smallBody {
		return DecodeSubmit(r.Body)
	}
	buf := smallBodies.Get().(*[smallBody]byte)
	defer smallBodies.Put(buf)
	n, err := 0, error(nil)
	for n < int(size) && err == nil {
		var k int
		k, err = r.Body.Read(buf[n:size])
		n += k
	}
	if n == int(size) && (err == nil || errors.Is(err, io.EOF)) {
		return decodeSubmitBytes(buf[:n])
	}
	// Short or failed: the decoder sees the same bytes, then the same error.
	return DecodeSubmit(io.MultiReader(bytes.NewReader(buf[:n]), errReader{err}))
}

// errReader fails every read with err (io.EOF when nil).
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// decodeSubmitBytes is DecodeSubmit(bytes.NewReader(b)): the same request
// or the same error for every b (FuzzDecodeSubmitBytes checks it). The
// common body, an object of "id", "type" and "payload" with plain ASCII
// strings and a scalar payload, is scanned here without reflection; any
// other goes to DecodeSubmit.
func decodeSubmitBytes(b []byte) (SubmitRequest, error) {
	if req, ok := scanSubmit(b); ok {
		return finishSubmit(req)
	}
	return DecodeSubmit(bytes.NewReader(b))
}

// scanSubmit reads b when it is a plain submission; ok is false for
// anything it does not handle (escapes, non-ASCII, duplicate or
// differently-cased keys, object or array payloads, bad JSON), which the
// JSON decoder then reads.
func scanSubmit(b []byte) (req SubmitRequest, ok bool) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return req, false
	}
	i = skipSpace(b, i+1)
	var seen [3]bool
	if i < len(b) && b[i] == '}' {
		return req, skipSpace(b, i+1) == len(b)
	}
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return req, false
		}
		field := -1
		switch string(key) {
		case "id":
			field = 0
		case "type":
			field = 1
		case "payload":
			field = 2
		}
		if field < 0 || seen[field] {
			return req, false
		}
		seen[field] = true
		i = skipSpace(b, j)
		if i == len(b) || b[i] != ':' {
			return req, false
		}
		i = skipSpace(b, i+1)
		switch field {
		case 0, 1:
			s, j, ok := plainString(b, i)
			if !ok {
				return req, false
			}
			if field == 0 {
				req.ID = string(s)
			} else {
				req.Type = string(s)
			}
			i = j
		case 2:
			tok, j, ok := scalar(b, i)
			if !ok {
				return req, false
			}
			req.Payload = bytes.Clone(tok)
			i = j
		}
		i = skipSpace(b, i)
		if i == len(b) {
			return req, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
			continue
		case '}':
			return req, skipSpace(b, i+1) == len(b)
		}
		return req, false
	}
}

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a JSON string at b[i] without escapes, control or
// non-ASCII bytes: its content and the index after its closing quote.
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// scalar reads a plain string, a number, true, false or null at b[i]: the
// token and the index after it.
func scalar(b []byte, i int) (tok []byte, next int, ok bool) {
	if i < len(b) && b[i] == '"' {
		_, j, ok := plainString(b, i)
		if !ok {
			return nil, 0, false
		}
		return b[i:j], j, true
	}
	j := i
	for j < len(b) && (b[j] >= 'a' && b[j] <= 'z' || b[j] >= '0' && b[j] <= '9' || b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'E') {
		j++
	}
	tok = b[i:j]
	switch {
	case len(tok) == 0:
		return nil, 0, false
	case string(tok) == "true" || string(tok) == "false" || string(tok) == "null":
		return tok, j, true
	case (tok[0] == '-' || tok[0] >= '0' && tok[0] <= '9') && json.Valid(tok):
		return tok, j, true
	}
	return nil, 0, false
}
