package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// rateCalls records what the rate endpoints asked of the cluster; the
// surface is under test here (decoding, status codes, the client), and
// TestRatesOnANode runs the same endpoints on a real node.
type rateCalls struct {
	mu   sync.Mutex
	sets []string
	err  error
	list []httpapi.RateInfo
}

func (a *rateCalls) SetRate(_ context.Context, jobType string, r throttler.Rate, strict bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sets = append(a.sets, fmt.Sprintf("%s=%s strict=%v", jobType, r, strict))
	return a.err
}

func (a *rateCalls) Rates(context.Context) ([]httpapi.RateInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.list, a.err
}

func (a *rateCalls) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.sets...)
}

func rateServer(t *testing.T, a httpapi.RateAdmin, opts ...httpapi.Option) *httptest.Server {
	t.Helper()
	if a != nil {
		opts = append(opts, httpapi.WithRateAdmin(a))
	}
	srv, err := httpapi.New(nopBackend{}, opts...)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func put(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var eb struct{ Error string }
	if resp.StatusCode >= 300 && json.Unmarshal(data, &eb) == nil && eb.Error != "" {
		return resp.StatusCode, eb.Error
	}
	return resp.StatusCode, string(data)
}

// TestSetRateBadInput: every bad PUT /rates/{type} is a 400 that names the
// field and shows an example, and reaches no throttler.
func TestSetRateBadInput(t *testing.T) {
	t.Parallel()
	a := &rateCalls{}
	ts := rateServer(t, a)
	for _, c := range []struct{ name, path, body, want string }{
		{"Empty", "/rates/square", ``, `empty body; send {"rate":"20/s","mode":"strict"}`},
		{"NotJSON", "/rates/square", `20/s`, `not a JSON object like {"rate":"20/s","mode":"strict"}`},
		{"NoRate", "/rates/square", `{"mode":"strict"}`, `missing "rate": e.g. {"rate":"20/s"`},
		{"RateNotString", "/rates/square", `{"rate":20}`, `field "rate" must be a string`},
		{"NoSlash", "/rates/square", `{"rate":"20"}`, `rate "20": no '/' between the count and the period; want COUNT/PERIOD, e.g. "10/s"`},
		{"ZeroCount", "/rates/square", `{"rate":"0/s"}`, `count "0" is not a whole number from 1 to`},
		{"BadPeriod", "/rates/square", `{"rate":"20/fortnight"}`, `period "fortnight" is neither s, m, h nor a positive Go duration`},
		{"NegativePeriod", "/rates/square", `{"rate":"20/-1s"}`, `period "-1s"`},
		{"TooMany", "/rates/square", `{"rate":"99999999/s"}`, `use a shorter period`},
		{"BadMode", "/rates/square", `{"rate":"20/s","mode":"sliding"}`, `field "mode" is "sliding": want "timer" or "strict"`},
		{"UnknownField", "/rates/square", `{"rate":"20/s","burst":3}`, `unknown field "burst"; the fields are "rate" and "mode"`},
		{"Extra", "/rates/square", `{"rate":"20/s"} {}`, `extra data after the JSON object`},
		{"BadType", "/rates/%01", `{"rate":"20/s"}`, `job type "\x01" must be 1-128 bytes of printable text`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := put(t, ts.URL+c.path, c.body)
			require.Equal(t, http.StatusBadRequest, code, body)
			require.Contains(t, body, c.want)
		})
	}
	require.Empty(t, a.calls(), "a bad request reached the throttlers")
}

// TestSetRateAndList: a good PUT reaches the cluster with the parsed rate
// and mode and answers what was set; GET /rates lists the throttlers by
// type; the Go client does both; the cluster's errors keep their codes.
func TestSetRateAndList(t *testing.T) {
	t.Parallel()
	a := &rateCalls{list: []httpapi.RateInfo{
		{Type: "square", Rate: "20/s", Calls: 20, Per: "1s", Mode: httpapi.RateModeStrict, Node: "127.0.0.1:2700", Queued: 3, Granted: 40, Refused: 1},
		{Type: "factorize", Rate: "100/m", Calls: 100, Per: "1m0s", Mode: httpapi.RateModeTimer, Node: "127.0.0.1:2701"},
	}}
	ts := rateServer(t, a)
	code, body := put(t, ts.URL+"/rates/square", `{"rate":"20/s","mode":"strict"}`)
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"type":"square","rate":"20/s","calls":20,"per":"1s","mode":"strict","queued":0,"granted":0,"refused":0}`, body)
	code, body = put(t, ts.URL+"/rates/a%20b", `{"rate":"5/500ms"}`) // mode defaults to timer; the type is unescaped
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, []string{"square=20/1s strict=true", "a b=5/500ms strict=false"}, a.calls())

	ctx := context.Background()
	c, err := httpapi.NewClient(ts.URL)
	require.NoError(t, err)
	info, err := c.SetRate(ctx, "square", httpapi.RateRequest{Rate: "1000/h"})
	require.NoError(t, err)
	require.Equal(t, httpapi.RateInfo{Type: "square", Rate: "1000/h", Calls: 1000, Per: "1h0m0s", Mode: httpapi.RateModeTimer}, *info)
	list, err := c.Rates(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"factorize", "square"}, []string{list[0].Type, list[1].Type}, "sorted by type")
	require.Equal(t, a.list[0], list[1])

	_, err = c.SetRate(ctx, "square", httpapi.RateRequest{Rate: "20"})
	require.ErrorIs(t, err, httpapi.ErrInvalid)

	a.err = fmt.Errorf("%w: %q is not limited; give it a rate with --rate", httpapi.ErrNotFound, "cube")
	_, err = c.SetRate(ctx, "cube", httpapi.RateRequest{Rate: "1/s"})
	require.ErrorIs(t, err, httpapi.ErrNotFound)
	require.ErrorContains(t, err, `"cube" is not limited`)
	a.err = fmt.Errorf("%w: the throttler did not confirm in time", httpapi.ErrUnavailable)
	_, err = c.Rates(ctx)
	require.ErrorIs(t, err, httpapi.ErrUnavailable)
}

// TestRatesWithoutThrottlers: a server without a RateAdmin lists none and
// refuses to set one (501),
// and the token guards the rate endpoints like every other.
func TestRatesWithoutThrottlers(t *testing.T) {
	t.Parallel()
	ts := rateServer(t, nil)
	code, body := put(t, ts.URL+"/rates/square", `{"rate":"20/s"}`)
	require.Equal(t, http.StatusNotImplemented, code, body)
	require.Contains(t, body, "start the node with --rate")
	c, err := httpapi.NewClient(ts.URL)
	require.NoError(t, err)
	list, err := c.Rates(context.Background())
	require.NoError(t, err, "no throttlers is an empty list")
	require.Empty(t, list)

	tokens, err := httpapi.NewTokens(goodToken)
	require.NoError(t, err)
	a := &rateCalls{}
	ts = rateServer(t, a, httpapi.WithTokens(tokens))
	code, _ = put(t, ts.URL+"/rates/square", `{"rate":"20/s"}`)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Empty(t, a.calls())
	c, err = httpapi.NewClient(ts.URL, httpapi.WithToken(goodToken))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.SetRate(ctx, "square", httpapi.RateRequest{Rate: "20/s", Mode: httpapi.RateModeStrict})
	require.NoError(t, err)
	require.Equal(t, []string{"square=20/1s strict=true"}, a.calls())
}
