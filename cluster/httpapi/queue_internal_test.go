package httpapi

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQueueFields: the queueing fields of a submission (issue 37) decode
// into the Work, and bad ones get a 400 (ErrInvalid) naming the field with
// an example; nothing is stored for them.
func TestQueueFields(t *testing.T) {
	t.Parallel()
	bad := []struct{ body, field, example string }{
		{`{"type":"sq","run_at":"tomorrow"}`, `"run_at"`, "2026-11-28T10:00:00Z"},
		{`{"type":"sq","run_at":"2026-11-28 10:00:00"}`, `"run_at"`, "2026-11-28T10:00:00Z"},
		{`{"type":"sq","delay":"5 minutes"}`, `"delay"`, "90s"},
		{`{"type":"sq","delay":"-5s"}`, `"delay"`, "90s"},
		{`{"type":"sq","delay":"5s","run_at":"2026-11-28T10:00:00Z"}`, `"run_at" and "delay"`, "90s"},
		{`{"type":"sq","priority":10}`, `"priority"`, `"priority":7`},
		{`{"type":"sq","priority":-1}`, `"priority"`, `"priority":7`},
		{`{"type":"sq","fairness_key":"` + strings.Repeat("k", 300) + `"}`, `"fairness_key"`, "customer-42"},
	}
	for _, tt := range bad {
		_, err := decodeSubmitBytes([]byte(tt.body))
		require.Error(t, err, tt.body)
		require.True(t, errors.Is(err, ErrInvalid), "%s: %v", tt.body, err)
		require.Contains(t, err.Error(), tt.field, tt.body)
		require.Contains(t, err.Error(), tt.example, tt.body)
	}
	_, err := decodeSubmitBytes([]byte(`{"type":"sq","priority":"high"}`))
	require.ErrorIs(t, err, ErrInvalid)
	require.Contains(t, err.Error(), "priority")

	req, err := decodeSubmitBytes([]byte(`{"type":"sq","run_at":"2026-11-28T10:00:00+01:00","priority":9,"fairness_key":"acme"}`))
	require.NoError(t, err)
	w := req.work()
	require.Equal(t, time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC).UnixNano(), w.GetRunAtUnixNano())
	require.Equal(t, int32(9), w.GetPriority())
	require.Equal(t, "acme", w.GetFairnessKey())

	req, err = decodeSubmitBytes([]byte(`{"type":"sq","delay":"1h"}`))
	require.NoError(t, err)
	before := time.Now()
	w = req.work()
	require.WithinDuration(t, before.Add(time.Hour), time.Unix(0, w.GetRunAtUnixNano()), time.Minute)
	require.Nil(t, w.Priority, "absent: the master's default 5")

	req, err = decodeSubmitBytes([]byte(`{"type":"sq","payload":7}`))
	require.NoError(t, err)
	w = req.work()
	require.Zero(t, w.GetRunAtUnixNano())
	require.Nil(t, w.Priority)
}
