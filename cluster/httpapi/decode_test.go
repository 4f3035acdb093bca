package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

func TestDecodeSubmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		want    httpapi.SubmitRequest
		wantErr error
	}{
		{name: "Full", body: `{"id":"a","type":"square","payload":7}`, want: httpapi.SubmitRequest{ID: "a", Type: "square", Payload: json.RawMessage("7")}},
		{name: "PayloadCompacted", body: "{\"type\":\"t\",\"payload\": { \"a\" : [1, 2] }}\n", want: httpapi.SubmitRequest{Type: "t", Payload: json.RawMessage(`{"a":[1,2]}`)}},
		{name: "NullPayloadIsNone", body: `{"type":"t","payload":null}`, want: httpapi.SubmitRequest{Type: "t"}},
		{name: "StringPayload", body: `{"type":"t","payload":"250ms"}`, want: httpapi.SubmitRequest{Type: "t", Payload: json.RawMessage(`"250ms"`)}},
		{name: "FieldNamesIgnoreCase", body: `{"Type":"t"}`, want: httpapi.SubmitRequest{Type: "t"}},
		{name: "Empty", body: ``, wantErr: httpapi.ErrInvalid},
		{name: "WhitespaceOnly", body: "  \n", wantErr: httpapi.ErrInvalid},
		{name: "NullBody", body: `null`, wantErr: httpapi.ErrInvalid},
		{name: "TypeOnlySpaces", body: `{"type":""}`, wantErr: httpapi.ErrInvalid},
		{name: "TypeWithNewline", body: `{"type":"a\nb"}`, wantErr: httpapi.ErrInvalid},
		{name: "TypeTooLong", body: `{"type":"` + strings.Repeat("t", httpapi.MaxTypeLength+1) + `"}`, wantErr: httpapi.ErrInvalid},
		{name: "IDNumber", body: `{"id":1,"type":"t"}`, wantErr: httpapi.ErrInvalid},
		{name: "InvalidUTF8IDRefused", body: "{\"id\":\"\xff\",\"type\":\"t\"}", wantErr: httpapi.ErrInvalid},
		{name: "TwoObjects", body: `{"type":"t"}{"type":"t"}`, wantErr: httpapi.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := httpapi.DecodeSubmit(strings.NewReader(tc.body))
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDecodeSubmitTooLarge(t *testing.T) {
	t.Parallel()
	body := `{"type":"square","payload":"` + strings.Repeat("x", 100) + `"}`
	for _, limit := range []int64{10, 50, int64(len(body)) - 1} {
		r := httptestMaxBytes(body, limit)
		_, err := httpapi.DecodeSubmit(r)
		require.ErrorIs(t, err, httpapi.ErrTooLarge, "limit %d", limit)
	}
	_, err := httpapi.DecodeSubmit(httptestMaxBytes(body, int64(len(body))))
	require.NoError(t, err)
}

// httptestMaxBytes wraps body in an http.MaxBytesReader, as the server does.
func httptestMaxBytes(body string, limit int64) io.Reader {
	return http.MaxBytesReader(nil, io.NopCloser(strings.NewReader(body)), limit)
}

// FuzzDecodeSubmit checks DecodeSubmit against its contract for any body:
// it fails with ErrInvalid, or returns a request that is valid and that
// survives a round trip through JSON unchanged.
func FuzzDecodeSubmit(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","type":"square","payload":7}`, `{"type":"t","payload":{"a":[1,2.5,"x"]}}`,
		`{"type":"t","payload":null}`, `{}`, `[]`, `{"type":"\u0000"}`, `{"id":"","type":"x"}`,
		`{"type":"t"} x`, `{"type":"t","extra":1}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := httpapi.DecodeSubmit(bytes.NewReader(body))
		if err != nil {
			require.True(t, errors.Is(err, httpapi.ErrInvalid), "error %v does not wrap ErrInvalid", err)
			return
		}
		require.NotEmpty(t, req.Type)
		require.LessOrEqual(t, len(req.Type), httpapi.MaxTypeLength)
		require.LessOrEqual(t, len(req.ID), httpapi.MaxIDLength)
		if req.Payload != nil {
			require.True(t, json.Valid(req.Payload), "payload %q", req.Payload)
			var compact bytes.Buffer
			require.NoError(t, json.Compact(&compact, req.Payload))
			require.Equal(t, compact.String(), string(req.Payload), "payload is compacted")
		}
		again, err := json.Marshal(req)
		require.NoError(t, err)
		back, err := httpapi.DecodeSubmit(bytes.NewReader(again))
		require.NoError(t, err, "re-encoded %s", again)
		require.Equal(t, req, back)
	})
}
