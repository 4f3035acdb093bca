package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

func testConfig() Config {
	return Config{Recipients: 300, Workers: 4, Window: 2, Batch: 50, Timeout: time.Minute, Progress: time.Second}
}

func TestCampaignWithBuiltInSink(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	sum, err := runCampaign(context.Background(), testConfig(), &out)
	require.NoError(t, err)
	require.Equal(t, uint64(300), sum.Stats.Confirmed)
	require.Equal(t, int64(300), sum.SinkReceived, "at least once, and here exactly once")
	require.Equal(t, 300, sum.SinkDistinct, "every recipient got an email")
	require.Contains(t, out.String(), "recipients table ready: 300 rows")
}

func TestCampaignWithExternalSMTPAndFile(t *testing.T) {
	t.Parallel()
	sink, err := StartSink()
	require.NoError(t, err)
	defer func() { require.NoError(t, sink.Close()) }()
	cfg := testConfig()
	cfg.SMTP = sink.Addr()
	cfg.DB = filepath.Join(t.TempDir(), "r.db")
	cfg.Recipients = 120
	sum, err := runCampaign(context.Background(), cfg, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, int64(-1), sum.SinkReceived)
	require.Equal(t, int64(120), sink.Received())
	require.Equal(t, 120, sink.Distinct())

	// Run again on the same file: the table is reused, the campaign repeats.
	_, err = runCampaign(context.Background(), cfg, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, int64(240), sink.Received())
}

func TestCampaignUnreachableSMTPFails(t *testing.T) {
	t.Parallel()
	sink, err := StartSink()
	require.NoError(t, err)
	addr := sink.Addr()
	require.NoError(t, sink.Close()) // nothing listens there any more
	cfg := testConfig()
	cfg.SMTP = addr
	cfg.Recipients = 5
	cfg.Workers = 1
	sum, err := runCampaign(context.Background(), cfg, &bytes.Buffer{})
	require.NoError(t, err, "the epic ends; the items are counted as failed")
	require.Equal(t, uint64(5), sum.Stats.Failed)
	require.Zero(t, sum.Stats.Confirmed)
}

func TestConfigRejectsBadFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{name: "Recipients", change: func(c *Config) { c.Recipients = MaxRecipients + 1 }, want: "-recipients"},
		{name: "Workers", change: func(c *Config) { c.Workers = 0 }, want: "-workers"},
		{name: "Window", change: func(c *Config) { c.Window = 0 }, want: "-window"},
		{name: "Batch", change: func(c *Config) { c.Batch = 0 }, want: "-batch"},
		{name: "Timeout", change: func(c *Config) { c.Timeout = 0 }, want: "-timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			tt.change(&cfg)
			_, err := runCampaign(context.Background(), cfg, &bytes.Buffer{})
			require.Error(t, err)
			require.True(t, strings.Contains(err.Error(), tt.want), err.Error())
		})
	}
}

func TestCreatorFillsTemplate(t *testing.T) {
	t.Parallel()
	_, err := newEmailCreatorProps("{{.Nope")
	require.ErrorContains(t, err, "parse template")
}
