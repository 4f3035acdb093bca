package httpapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeSubmitKeys: the key fields are read, and bad ones are a 400
// (ErrInvalid) naming the field with an example.
func TestDecodeSubmitKeys(t *testing.T) {
	t.Parallel()
	req, err := DecodeSubmit(strings.NewReader(`{"type":"square","payload":3,"unique_key":"invoice-42","unique_for":"1h30m","concurrency_key":"tenant-a"}`))
	require.NoError(t, err)
	require.Equal(t, "invoice-42", req.UniqueKey)
	require.Equal(t, "1h30m", req.UniqueFor)
	require.Equal(t, "tenant-a", req.ConcurrencyKey)
	for body, want := range map[string]string{
		`{"type":"square","unique_key":"k","unique_for":"soon"}`:                 `"unique_for" "soon" is not a duration`,
		`{"type":"square","unique_key":"k","unique_for":"-1s"}`:                  `"unique_for":"1h30m"`,
		`{"type":"square","unique_for":"1h"}`:                                    `"unique_for" needs "unique_key"`,
		`{"type":"square","unique_key":"` + strings.Repeat("x", 257) + `"}`:      `"unique_key" must be 1-256 bytes`,
		`{"type":"square","concurrency_key":"` + strings.Repeat("x", 257) + `"}`: `"concurrency_key" must be 1-256 bytes`,
		`{"type":"square","unique_key":"k","unique_for":"9000h"}`:                `from 0 to`,
	} {
		_, err := DecodeSubmit(strings.NewReader(body))
		require.ErrorIs(t, err, ErrInvalid, body)
		require.Contains(t, err.Error(), want, body)
		code, _ := errStatus(err)
		require.Equal(t, 400, code)
	}
}
