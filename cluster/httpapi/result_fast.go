package httpapi

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/foreman-actors/foreman/actors/frontend"
)

// The result feed's lines, written and read without reflection. A follower
// of the feed handles every finished job once, so encoding/json's reflection
// per line was a measurable share of the CPU a job costs end to end: about
// a tenth of the frontend's and two fifths of the Go client's under batch
// load. The common line (plain ASCII strings, a scalar result) is built and
// scanned by hand; any other takes encoding/json, and the bytes or values are
// the same either way (FuzzAppendResultLine, FuzzScanResultLine).

// appendResultLine appends json.Marshal(resultLine(e)) to dst: the same
// bytes, without the newline.
func appendResultLine(dst []byte, e frontend.FeedEntry) []byte {
	start := len(dst)
	if out, ok := appendResultLineFast(dst, e); ok {
		return out
	}
	b, _ := json.Marshal(resultLine(e)) // our own type: cannot fail
	return append(dst[:start], b...)
}

// appendResultLineFast writes the line when every string is plain (see
// htmlSafe) and the result is empty or one scalar token; ok is false
// otherwise, with dst's new bytes to be dropped.
func appendResultLineFast(dst []byte, e frontend.FeedEntry) (out []byte, ok bool) {
	name, _ := statusName(e.GetStatus())
	dst = append(dst, `{"cursor":"`...)
	dst, _ = e.Cursor.AppendText(dst) // digits, 's', ':' and ','
	dst = append(dst, `","id":`...)
	if dst, ok = appendPlain(dst, e.GetWorkId()); !ok {
		return dst, false
	}
	if t := e.GetJobType(); t != "" {
		dst = append(dst, `,"type":`...)
		if dst, ok = appendPlain(dst, t); !ok {
			return dst, false
		}
	}
	dst = append(dst, `,"status":`...)
	if dst, ok = appendPlain(dst, name); !ok {
		return dst, false
	}
	dst = append(dst, `,"result":`...)
	switch r := e.GetResult(); {
	case len(r) == 0:
		dst = append(dst, "null"...)
	default:
		// A whole scalar token is valid JSON, so resultJSON keeps it as it
		// is, and compacting changes nothing in it; Marshal only escapes
		// <, > and & in it.
		tok, next, isScalar := scalar(r, 0)
		if !isScalar || next != len(r) || !htmlSafe(tok) {
			return dst, false
		}
		dst = append(dst, tok...)
	}
	if s := e.GetError(); s != "" {
		dst = append(dst, `,"error":`...)
		if dst, ok = appendPlain(dst, s); !ok {
			return dst, false
		}
	}
	dst = append(dst, `,"finished_at":"`...)
	// time.Time's MarshalJSON: RFC 3339 with nanoseconds; every Unix
	// nanosecond count is a year it accepts.
	dst = time.Unix(0, e.GetAtUnixNano()).UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `"}`...)
	return dst, true
}

// appendPlain appends s quoted when Marshal writes it as it is: printable
// ASCII without quote, backslash or the HTML characters it escapes.
func appendPlain(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return dst, false
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), true
}

// htmlSafe reports whether b has none of the bytes Marshal escapes in a
// json.RawMessage (<, > and &).
func htmlSafe(b []byte) bool { return !bytes.ContainsAny(b, "<>&") }

// resultLineKeys are the keys of a line in the order appendResultLine writes
// them; the scanner takes no other order.
var resultLineKeys = [...]string{"cursor", "id", "type", "status", "result", "error", "finished_at"}

// decodeResultLine is json.Unmarshal(b, &l) for a line of GET /results: the
// same line or the same error.
func decodeResultLine(b []byte) (ResultLine, error) {
	if l, ok := scanResultLine(b); ok {
		return l, nil
	}
	var l ResultLine
	err := json.Unmarshal(b, &l)
	return l, err
}

// scanResultLine reads the line the server writes in its common form: the
// keys in resultLineKeys' order (type and error may be absent), strings
// without escapes, a scalar result. ok is false for anything else.
func scanResultLine(b []byte) (l ResultLine, ok bool) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return l, false
	}
	i = skipSpace(b, i+1)
	want := 0 // the index in resultLineKeys of the next key allowed
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return l, false
		}
		field := -1
		for k := want; k < len(resultLineKeys); k++ {
			if string(key) == resultLineKeys[k] {
				field = k
				break
			}
		}
		if field < 0 {
			return l, false // unknown, repeated or out of order
		}
		want = field + 1
		i = skipSpace(b, j)
		if i == len(b) || b[i] != ':' {
			return l, false
		}
		i = skipSpace(b, i+1)
		switch resultLineKeys[field] {
		case "result":
			tok, j, ok := scalar(b, i)
			if !ok {
				return l, false
			}
			l.Result = json.RawMessage(bytes.Clone(tok))
			i = j
		case "finished_at":
			_, j, ok := plainString(b, i)
			if !ok || l.FinishedAt.UnmarshalJSON(b[i:j]) != nil {
				return l, false
			}
			i = j
		default:
			s, j, ok := plainString(b, i)
			if !ok {
				return l, false
			}
			switch resultLineKeys[field] {
			case "cursor":
				l.Cursor = string(s)
			case "id":
				l.ID = string(s)
			case "type":
				l.Type = string(s)
			case "status":
				l.Status = string(s)
			case "error":
				l.Error = string(s)
			}
			i = j
		}
		i = skipSpace(b, i)
		if i == len(b) {
			return l, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
			continue
		case '}':
			return l, skipSpace(b, i+1) == len(b)
		}
		return l, false
	}
}
