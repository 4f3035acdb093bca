package httpapi

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// UTF8Error reports text that is not valid UTF-8. encoding/json would
// silently replace each bad byte with U+FFFD, so a work id "ab\xff" would
// be stored as "ab\uFFFD": a different id than the client sent, which it
// could never look up. Errors that carry it wrap ErrInvalid (HTTP 400).
type UTF8Error struct {
	// Offset is the offset of the first bad byte, counting from 0: in the
	// request body (server side) or in Field (client side).
	Offset int64
	// Field names the field the client checked ("work id", "job type",
	// "payload"); empty for a request body.
	Field string
	// Item is the item's position in a batch, from 1; 0 outside a batch.
	// ItemOffset is then the bad byte's offset within the item.
	Item       int
	ItemOffset int64
}

// Error says where the bad byte is and what to send instead.
func (e *UTF8Error) Error() string {
	const fix = "JSON text must be UTF-8: send the work id, type and payload as UTF-8 text (encode binary data, e.g. as base64 in a JSON string)"
	switch {
	case e.Field != "":
		return fmt.Sprintf("the %s is not valid UTF-8 at byte offset %d; %s", e.Field, e.Offset, fix)
	case e.Item > 0:
		return fmt.Sprintf("the request is not valid UTF-8 at byte offset %d of the body (byte %d of item %d); %s", e.Offset, e.ItemOffset, e.Item, fix)
	default:
		return fmt.Sprintf("the request is not valid UTF-8 at byte offset %d of the body; %s", e.Offset, fix)
	}
}

// invalidUTF8At returns the offset of the first byte of b that is not
// part of valid UTF-8, or -1.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

// checkSubmitText is the client's check of a submission before it is
// encoded: json.Marshal would write U+FFFD for each byte that is not valid
// UTF-8, and the server would accept the changed id. The payload is
// checked too, which the server would refuse.
func checkSubmitText(req SubmitRequest) error {
	for _, f := range []struct {
		name string
		text string
	}{{"work id", req.ID}, {"job type", req.Type}, {"payload", string(req.Payload)}} {
		if utf8.ValidString(f.text) {
			continue
		}
		return fmt.Errorf("%w: %w", ErrInvalid, &UTF8Error{Field: f.name, Offset: int64(invalidUTF8At([]byte(f.text)))})
	}
	return nil
}

// utf8Reader passes on the bytes of r up to the first one that is not part
// of valid UTF-8, and from then on fails every read with a *UTF8Error
// (decodeErr wraps it in ErrInvalid). The
// JSON decoder reads through it, so that it never sees the bad byte (it
// would replace it with U+FFFD). A sequence split across two reads is
// checked when its end arrives.
type utf8Reader struct {
	r       io.Reader
	off     int64 // bytes passed on so far
	pend    [utf8.UTFMax]byte
	npend   int // bytes of an incomplete sequence at the end of the last read
	pendOff int64
	err     error // sticky: the *UTF8Error once found
}

func (u *utf8Reader) Read(p []byte) (int, error) {
	if u.err != nil {
		return 0, u.err
	}
	n, err := u.r.Read(p)
	b := p[:n]
	i := 0
	for u.npend > 0 && i < len(b) { // finish the sequence the last read split
		u.pend[u.npend] = b[i]
		u.npend++
		i++
		if !utf8.FullRune(u.pend[:u.npend]) {
			continue
		}
		r, size := utf8.DecodeRune(u.pend[:u.npend])
		if r == utf8.RuneError && size <= 1 {
			return u.fail(0, u.pendOff)
		}
		i -= u.npend - size // bytes after the rune belong to the rest
		u.npend = 0
	}
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		if !utf8.FullRune(b[i:]) { // a sequence that the next read completes
			u.npend = copy(u.pend[:], b[i:])
			u.pendOff = u.off + int64(i)
			break
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return u.fail(i, u.off+int64(i))
		}
		i += size
	}
	if errors.Is(err, io.EOF) && u.npend > 0 { // the body ends inside a sequence
		return u.fail(max(int(u.pendOff-u.off), 0), u.pendOff)
	}
	u.off += int64(n)
	return n, err
}

// fail passes on the n good bytes of this read and records the error.
func (u *utf8Reader) fail(n int, at int64) (int, error) {
	u.err = &UTF8Error{Offset: at}
	u.off += int64(n)
	return n, u.err
}
