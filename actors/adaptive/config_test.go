package adaptive_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/adaptive"
)

func TestConfig(t *testing.T) {
	t.Parallel()

	t.Run("ZeroMeansDefault", func(t *testing.T) {
		t.Parallel()
		cfg := adaptive.DefaultConfig()
		require.Equal(t, adaptive.DefaultLearningRate, cfg.LearningRate)
		require.Equal(t, adaptive.DefaultExplorationRate, cfg.ExplorationRate)
		require.Equal(t, adaptive.DefaultInitialLimit, cfg.InitialLimit)
		require.Equal(t, adaptive.DefaultMaxLimit, cfg.MaxLimit)
		require.Equal(t, adaptive.DefaultSampleInterval, cfg.SampleInterval)
		require.NoError(t, adaptive.Config{}.Validate())
	})

	t.Run("NegativeMeansZero", func(t *testing.T) {
		t.Parallel()
		cfg := adaptive.Config{ExplorationRate: -1, Penalty: -1, Jitter: -1}
		require.NoError(t, cfg.Validate())
	})

	tests := []struct {
		name string
		cfg  adaptive.Config
		want string
	}{
		{name: "LearningRateAboveOne", cfg: adaptive.Config{LearningRate: 1.5}, want: "LearningRate 1.5 must be in (0, 1]"},
		{name: "LearningRateNaN", cfg: adaptive.Config{LearningRate: math.NaN()}, want: "LearningRate"},
		{name: "ExplorationRateOne", cfg: adaptive.Config{ExplorationRate: 1}, want: "ExplorationRate 1 must be in [0, 1)"},
		{name: "MinLimitNegative", cfg: adaptive.Config{MinLimit: -2}, want: "MinLimit -2 must be at least 1"},
		{name: "MaxBelowMin", cfg: adaptive.Config{MinLimit: 5, MaxLimit: 3}, want: "MaxLimit 3 must be at least MinLimit 5"},
		{name: "InitialAboveMax", cfg: adaptive.Config{MaxLimit: 4, InitialLimit: 9}, want: "InitialLimit 9 must be in [MinLimit 1, MaxLimit 4]"},
		{name: "PenaltyOne", cfg: adaptive.Config{Penalty: 1}, want: "Penalty"},
		{name: "SampleIntervalNegative", cfg: adaptive.Config{SampleInterval: -time.Second}, want: "SampleInterval"},
		{name: "MinSamplesNegative", cfg: adaptive.Config{MinSamples: -1}, want: "MinSamples"},
		{name: "JitterOne", cfg: adaptive.Config{Jitter: 1}, want: "Jitter"},
		{name: "StaleAfterNegative", cfg: adaptive.Config{StaleAfter: -time.Second}, want: "StaleAfter"},
		{name: "CPUSaturationAboveOne", cfg: adaptive.Config{CPUSaturation: 2}, want: "CPUSaturation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
			require.ErrorIs(t, err, adaptive.ErrInvalidConfig)
			require.ErrorContains(t, err, tt.want)
			for _, k := range adaptive.PolicyKinds() {
				_, err := adaptive.NewPolicy(k, tt.cfg)
				require.ErrorIs(t, err, adaptive.ErrInvalidConfig, k.String())
			}
			_, err = adaptive.NewLimiter(adaptive.WithConfig(tt.cfg))
			require.ErrorIs(t, err, adaptive.ErrInvalidConfig)
			_, err = adaptive.Props(adaptive.WithConfig(tt.cfg))
			require.ErrorIs(t, err, adaptive.ErrInvalidConfig)
		})
	}
}

func TestPolicyKind(t *testing.T) {
	t.Parallel()
	for _, k := range adaptive.PolicyKinds() {
		got, err := adaptive.ParsePolicyKind(" " + k.String() + " ")
		require.NoError(t, err)
		require.Equal(t, k, got)
	}
	got, err := adaptive.ParsePolicyKind("SEED")
	require.NoError(t, err)
	require.Equal(t, adaptive.PolicySeed, got)

	_, err = adaptive.ParsePolicyKind("gradient")
	require.ErrorIs(t, err, adaptive.ErrUnknownPolicy)
	require.ErrorContains(t, err, `"gradient" (want one of default, seed, vegas)`)
	_, err = adaptive.NewPolicy(adaptive.PolicyKind(0), adaptive.Config{})
	require.ErrorIs(t, err, adaptive.ErrUnknownPolicy)
	require.Equal(t, "PolicyKind(0)", adaptive.PolicyKind(0).String())
	_, err = adaptive.Props(adaptive.WithPolicy(adaptive.PolicyKind(9)))
	require.ErrorIs(t, err, adaptive.ErrUnknownPolicy)
}
