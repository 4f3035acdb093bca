package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/messages"
)

// feedEntry builds a feed entry at cursor token cur.
func feedEntry(t testing.TB, cur, id, jobType string, status messages.WorkStatus, result []byte, errText string, at int64) frontend.FeedEntry {
	t.Helper()
	c, err := frontend.ParseCursor(cur)
	require.NoError(t, err)
	return frontend.FeedEntry{Cursor: c, FeedEntry: &messages.FeedEntry{WorkId: id, JobType: jobType, Status: status,
		Result: result, Error: errText, AtUnixNano: at}}
}

// TestAppendResultLineShapes: the hand-written line is Marshal's, byte for
// byte, for the common lines and for each thing that sends a line to
// Marshal instead.
func TestAppendResultLineShapes(t *testing.T) {
	t.Parallel()
	done, dead := messages.WorkStatus_WORK_STATUS_DONE, messages.WorkStatus_WORK_STATUS_DEAD
	cases := []struct {
		name string
		e    frontend.FeedEntry
		fast bool
	}{
		{"number result", feedEntry(t, "s0:12", "job-1", "square", done, []byte("49"), "", 1_700_000_000_123_456_789), true},
		{"string result", feedEntry(t, "s0:1,s1:9", "j", "t", done, []byte(`"ok"`), "", 0), true},
		{"no type", feedEntry(t, "0", "j", "", done, []byte("true"), "", 1), true},
		{"dead with error", feedEntry(t, "s0:3", "j", "t", dead, nil, "boom: bad payload", -1), true},
		{"object result", feedEntry(t, "s0:3", "j", "t", done, []byte(`{"a":1}`), "", 5), false},
		{"spaced result", feedEntry(t, "s0:3", "j", "t", done, []byte(" 7 "), "", 5), false},
		{"text result", feedEntry(t, "s0:3", "j", "t", done, []byte("hello"), "", 5), false},
		{"html in result", feedEntry(t, "s0:3", "j", "t", done, []byte(`"a<b"`), "", 5), false},
		{"html in id", feedEntry(t, "s0:3", "a&b", "t", done, []byte("1"), "", 5), false},
		{"quote in error", feedEntry(t, "s0:3", "j", "t", dead, nil, `say "no"`, 5), false},
		{"newline in error", feedEntry(t, "s0:3", "j", "t", dead, nil, "a\nb", 5), false},
		{"non-ASCII type", feedEntry(t, "s0:3", "j", "é", done, []byte("1"), "", 5), false},
		{"invalid UTF-8 result", feedEntry(t, "s0:3", "j", "t", done, []byte("\xff"), "", 5), false},
		{"unknown status", feedEntry(t, "s0:3", "j", "t", messages.WorkStatus(99), nil, "", math.MaxInt64), true},
		{"oldest time", feedEntry(t, "s0:3", "j", "t", done, []byte("0"), "", math.MinInt64), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(resultLine(tc.e))
			require.NoError(t, err)
			require.Equal(t, string(want), string(appendResultLine(nil, tc.e)))
			require.Equal(t, "prefix"+string(want), string(appendResultLine([]byte("prefix"), tc.e)), "appends")
			_, fast := appendResultLineFast(nil, tc.e)
			require.Equal(t, tc.fast, fast, "which path writes the line")
		})
	}
}

// FuzzAppendResultLine: for every entry the line is Marshal's.
func FuzzAppendResultLine(f *testing.F) {
	f.Add(uint64(12), "job-1", "square", int32(messages.WorkStatus_WORK_STATUS_DONE), []byte("49"), "", int64(1_700_000_000_123_456_789))
	f.Add(uint64(0), "a&b", "", int32(messages.WorkStatus_WORK_STATUS_DEAD), []byte(nil), "x\ny", int64(-5))
	f.Add(uint64(7), "j", "t", int32(3), []byte(`{"a": [1, "<"]}`), "", int64(0))
	f.Fuzz(func(t *testing.T, seq uint64, id, jobType string, status int32, result []byte, errText string, at int64) {
		e := feedEntry(t, "s0:"+strconv.FormatUint(seq>>1, 10), id, jobType, messages.WorkStatus(status), result, errText, at)
		want, err := json.Marshal(resultLine(e))
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendResultLine(nil, e)))
	})
}

// resultLineSeeds are lines of every shape: the server's own and others the
// scanner leaves to encoding/json.
var resultLineSeeds = []string{
	`{"cursor":"s0:12","id":"job-1","type":"square","status":"done","result":49,"finished_at":"2023-11-14T22:13:20.123456789Z"}`,
	`{"cursor":"s0:3","id":"j","status":"dead","result":null,"error":"boom","finished_at":"1970-01-01T00:00:00Z"}`,
	`{"cursor":"s0:3","id":"j","status":"done","result":"ok","finished_at":"1970-01-01T00:00:00Z"}`,
	` { "cursor" : "s0:1" , "id" : "j" , "status" : "done" , "result" : -1.5e3 , "finished_at" : "2026-01-02T03:04:05+01:00" } `,
	`{"cursor":"s0:3","id":"j","status":"done","result":{"a":1},"finished_at":"1970-01-01T00:00:00Z"}`,
	`{"id":"j","cursor":"s0:3","status":"done","result":1,"finished_at":"1970-01-01T00:00:00Z"}`,
	`{"cursor":"s0:3","cursor":"s0:4","id":"j"}`,
	`{"Cursor":"s0:3","id":"j"}`,
	`{"cursor":"s0:3","id":"j","extra":1}`,
	`{"cursor":"s0:3","id":"a\u0041"}`,
	`{"cursor":"s0:3","id":"j","finished_at":"yesterday"}`,
	`{"cursor":"s0:3","id":"j","finished_at":null}`,
	`{"cursor":"s0:3","id":"j","result":nul}`,
	`{"cursor":"s0:3","id":"j","result":07}`,
	`{"cursor":1}`,
	`{"cursor":"s0:3",}`,
	`{"cursor":"s0:3"} x`,
	`{}`,
	`{`,
	`null`,
	``,
}

// FuzzScanResultLine: the scanner's line is encoding/json's, for every
// input (the same line, or an error from both).
func FuzzScanResultLine(f *testing.F) {
	for _, s := range resultLineSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want ResultLine
		wantErr := json.Unmarshal(b, &want)
		got, err := decodeResultLine(b)
		if wantErr != nil {
			require.Error(t, err)
			require.Equal(t, wantErr.Error(), err.Error())
			return
		}
		require.NoError(t, err)
		require.Equal(t, want, got)
		if l, ok := scanResultLine(b); ok {
			require.Equal(t, want, l)
		}
	})
}

// TestScanResultLineReadsServerLines: the lines the server writes in the
// common form are read by the scanner, not by encoding/json.
func TestScanResultLineReadsServerLines(t *testing.T) {
	t.Parallel()
	for _, e := range []frontend.FeedEntry{
		feedEntry(t, "s0:12,s1:4", "job-1", "square", messages.WorkStatus_WORK_STATUS_DONE, []byte("49"), "", 1_700_000_000_123_456_789),
		feedEntry(t, "s0:3", "j", "", messages.WorkStatus_WORK_STATUS_CANCELLED, nil, "caller gone", 7),
	} {
		line := appendResultLine(nil, e)
		got, ok := scanResultLine(line)
		require.True(t, ok, "%s", line)
		var want ResultLine
		require.NoError(t, json.Unmarshal(line, &want))
		require.Equal(t, want, got)
		require.Equal(t, e.Cursor.String(), got.Cursor)
	}
}

// TestWriteResultLinesChunks: many lines leave in chunks of whole lines,
// and together they are the lines one by one.
func TestWriteResultLinesChunks(t *testing.T) {
	t.Parallel()
	var entries []frontend.FeedEntry
	var want bytes.Buffer
	for i := range 2000 {
		e := feedEntry(t, "s0:"+strconv.Itoa(i+1), "job-"+strconv.Itoa(i), "square", messages.WorkStatus_WORK_STATUS_DONE, []byte("49"), "", int64(i))
		entries = append(entries, e)
		b, err := json.Marshal(resultLine(e))
		require.NoError(t, err)
		want.Write(append(b, '\n'))
	}
	rec := &writeRecorder{ResponseRecorder: httptest.NewRecorder()}
	writeResultLines(rec, entries)
	require.Equal(t, want.String(), rec.Body.String())
	require.Greater(t, rec.writes, 1, "a large page is written in chunks")
	for _, w := range rec.chunks {
		require.True(t, strings.HasSuffix(w, "\n"), "every write ends with a whole line")
	}
}

type writeRecorder struct {
	*httptest.ResponseRecorder
	writes int
	chunks []string
}

func (w *writeRecorder) Write(b []byte) (int, error) {
	w.writes++
	w.chunks = append(w.chunks, string(b))
	return w.ResponseRecorder.Write(b)
}
