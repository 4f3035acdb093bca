package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeSeeds are bodies of every shape: the plain ones scanSubmit reads
// and the ones it leaves to the JSON decoder.
var decodeSeeds = []string{
	`{"type":"square","payload":7}`,
	`{"id":"hb-1-2","type":"square","payload":7}`,
	` { "payload" : -1.5e+3 , "type" : "t" , "id" : "" } ` + "\n",
	`{"type":"t","payload":"250ms"}`,
	`{"type":"t","payload":null}`,
	`{"type":"t","payload":true}`,
	`{"type":"t","payload":{"a":[1, 2]}}`,
	`{"type":"t","payload":[1,2]}`,
	`{"type":"t","payload":07}`,
	`{"type":"t","payload":nul}`,
	`{"type":"t","payload":1x}`,
	`{"type":"t","payload":"unterminated`,
	`{"Type":"t"}`,
	`{"type":"t","type":"u"}`,
	`{"type":"t","extra":1}`,
	`{"type":"a\nb"}`,
	`{"type":"a\u0041"}`,
	"{\"id\":\"\xff\",\"type\":\"t\"}",
	`{"id":"é","type":"t"}`,
	`{"id":1,"type":"t"}`,
	`{"id":null,"type":"t"}`,
	`{"type":""}`,
	`{"type":"` + strings.Repeat("t", MaxTypeLength+1) + `"}`,
	`{}`,
	`{`,
	`{"type":"t"`,
	`{"type":"t",}`,
	`{"type":"t"}{"type":"t"}`,
	`{"type":"t"} x`,
	`null`,
	`[]`,
	``,
	"  \n",
}

// FuzzDecodeSubmitBytes: the scanner's answer is the JSON decoder's, for
// every body (the same request, or an error with the same text).
func FuzzDecodeSubmitBytes(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantErr := DecodeSubmit(bytes.NewReader(b))
		got, gotErr := decodeSubmitBytes(b)
		requireSameDecode(t, b, want, wantErr, got, gotErr)
	})
}

func requireSameDecode(t *testing.T, body []byte, want SubmitRequest, wantErr error, got SubmitRequest, gotErr error) {
	t.Helper()
	if wantErr != nil {
		require.Error(t, gotErr, "body %q", body)
		require.Equal(t, wantErr.Error(), gotErr.Error(), "body %q", body)
		require.Equal(t, errors.Is(wantErr, ErrInvalid), errors.Is(gotErr, ErrInvalid))
		require.Equal(t, errors.Is(wantErr, ErrTooLarge), errors.Is(gotErr, ErrTooLarge))
		return
	}
	require.NoError(t, gotErr, "body %q", body)
	require.Equal(t, want, got, "body %q", body)
}

// TestDecodeSubmitBody: the handler's reading of a small body gives the
// decoder's answers, for whole bodies and for bodies cut short or failing
// part way (the decoder then sees the same bytes and the same error).
func TestDecodeSubmitBody(t *testing.T) {
	t.Parallel()
	for _, s := range decodeSeeds {
		req := httptest.NewRequest(http.MethodPost, PathWork, strings.NewReader(s))
		got, gotErr := decodeSubmitBody(req)
		want, wantErr := DecodeSubmit(strings.NewReader(s))
		requireSameDecode(t, []byte(s), want, wantErr, got, gotErr)
	}
	t.Run("ShortBody", func(t *testing.T) {
		t.Parallel()
		body := `{"type":"t"}`
		req := httptest.NewRequest(http.MethodPost, PathWork, strings.NewReader(body))
		req.ContentLength = int64(len(body)) + 10 // the client promised more
		got, gotErr := decodeSubmitBody(req)
		want, wantErr := DecodeSubmit(strings.NewReader(body))
		requireSameDecode(t, []byte(body), want, wantErr, got, gotErr)
	})
	t.Run("ReadFails", func(t *testing.T) {
		t.Parallel()
		broken := errors.New("connection reset")
		body := io.MultiReader(strings.NewReader(`{"type":`), errReader{broken})
		req := httptest.NewRequest(http.MethodPost, PathWork, body)
		req.ContentLength = 40
		_, gotErr := decodeSubmitBody(req)
		_, wantErr := DecodeSubmit(io.MultiReader(strings.NewReader(`{"type":`), errReader{broken}))
		require.Error(t, wantErr)
		require.Equal(t, wantErr.Error(), gotErr.Error())
		require.ErrorIs(t, gotErr, broken)
	})
	t.Run("PlainBodiesTakeTheScanner", func(t *testing.T) {
		t.Parallel()
		req, ok := scanSubmit([]byte(`{"id":"a","type":"square","payload":7}`))
		require.True(t, ok)
		require.Equal(t, SubmitRequest{ID: "a", Type: "square", Payload: json.RawMessage("7")}, req)
	})
}
