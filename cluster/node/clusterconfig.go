package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
)

// The settings every backend of a cluster must share, its number of
// shards and its rate limits, are recorded in the journal by the first
// backend that starts on it, in one event of ConfigStream; every later
// backend compares its own with the record and refuses to start on a
// difference. Two backends starting at once on a fresh journal cannot both
// record: the record is an append after the stream's last event under a
// freshly acquired epoch, so of two racing appends one is fenced or
// conflicts, and its backend reads the winner's settings, both of them at
// once, and compares.

// ConfigStream is the journal stream where a cluster records the settings
// every backend must share: events holding a structpb.Struct with the
// fields "shards" (the number of shards) and "rate_limits" (the rate
// limits in the --rate syntax, sorted by job type; "" for none). The first
// backend writes one; a change of the rate limits (ClusterConfig.
// ChangeRateLimits, --change-rate) appends another, and the last holds.
const ConfigStream = "foreman/config"

// ErrRatesMismatch means the backend's rate limits are not the ones its
// journal records: a shard master it hosted would hand work out under
// other limits than the rest of the cluster's.
var ErrRatesMismatch = errors.New("node: the rate limits differ from the journal's")

// Fields of a ConfigStream event.
const (
	configShards = "shards"
	configRates  = "rate_limits"
)

// clusterSettings are the settings ConfigStream records.
type clusterSettings struct {
	shards int
	rates  string // RateSpec of the limits
}

// toStruct is the event that records s.
func (s clusterSettings) toStruct() *structpb.Struct {
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		configShards: structpb.NewNumberValue(float64(s.shards)),
		configRates:  structpb.NewStringValue(s.rates),
	}}
}

// settingsFrom reads the settings of a ConfigStream event; false for an
// event that holds none.
func settingsFrom(m any) (clusterSettings, bool) {
	st, ok := m.(*structpb.Struct)
	if !ok {
		return clusterSettings{}, false
	}
	shards, ok := st.GetFields()[configShards].GetKind().(*structpb.Value_NumberValue)
	if !ok {
		return clusterSettings{}, false
	}
	return clusterSettings{shards: int(shards.NumberValue), rates: st.GetFields()[configRates].GetStringValue()}, true
}

// RateSpec formats limits as ParseRateLimits accepts them, sorted by job
// type: the same limits give the same spec however they were written. No
// limits give "".
func RateSpec(limits []RateLimit) string {
	sorted := slices.SortedFunc(slices.Values(limits), func(a, b RateLimit) int { return cmp.Compare(a.JobType, b.JobType) })
	parts := make([]string, len(sorted))
	for i, l := range sorted {
		parts[i] = l.String()
	}
	return strings.Join(parts, ",")
}

// rateFlag says how a rate spec is given on the command line.
func rateFlag(spec string) string {
	if spec == "" {
		return "no --rate (no limits)"
	}
	return "--rate " + strconv.Quote(spec)
}

// configCheck is what checkClusterConfig found.
type configCheck struct {
	// recorded says this backend wrote the record (the first start on the
	// journal, or a change of the rate limits).
	recorded bool
	// ratesBefore are the limits the journal recorded before a change
	// (changed only when this backend changed them).
	ratesBefore string
	changed     bool
}

// checkClusterConfig compares a backend's number of shards and rate limits
// with those its journal records, recording them when it records none (and
// the limits again when changeRates and they differ). Each difference is
// an error naming both values and what to do (ErrShardsMismatch,
// ErrRatesMismatch; both at once in one error, so that one restart fixes
// both); nothing is written then.
//
// A journal without a record but with a legacy ShardsStream record, or a
// used master stream (written before the settings were recorded), has that
// number of shards, or one; its rate limits are unknown, and this backend's
// are recorded.
func checkClusterConfig(ctx context.Context, j persistence.Journal, shards int, limits []RateLimit, changeRates bool) (configCheck, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultJournalOpenTimeout)
	defer cancel()
	mine := clusterSettings{shards: shards, rates: RateSpec(limits)}
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			// Each racer's AcquireEpoch fences the others' appends, so
			// racers that retry in step can fence each other round after
			// round (seen with four backends on a loaded machine). A
			// random pause, growing with the attempts, lets one append
			// land; the others then read it and compare.
			if err := sleepCtx(ctx, configRetryPause(attempt)); err != nil {
				return configCheck{}, fmt.Errorf("node: cannot record the cluster's settings in the journal stream %s: other backends kept writing it (%d attempts): %w", ConfigStream, attempt, errors.Join(lastErr, err))
			}
		}
		rec, found, last, err := loadSettings(ctx, j)
		if err != nil {
			return configCheck{}, fmt.Errorf("node: cannot read the cluster's settings from the journal stream %s: %w", ConfigStream, err)
		}
		if !found {
			implied, known, err := impliedShards(ctx, j)
			if err != nil {
				return configCheck{}, err
			}
			if known && implied != shards {
				return configCheck{}, shardsMismatch(shards, implied)
			}
		} else {
			var errs []error
			if rec.shards != shards {
				errs = append(errs, shardsMismatch(shards, rec.shards))
			}
			if rec.rates != mine.rates && !changeRates {
				errs = append(errs, ratesMismatch(mine.rates, rec.rates))
			}
			if len(errs) > 0 {
				return configCheck{}, errors.Join(errs...)
			}
			if rec.rates == mine.rates {
				return configCheck{}, nil
			}
		}
		// Nothing recorded yet, or a change of the rate limits.
		epoch, lastSeq, err := j.AcquireEpoch(ctx, ConfigStream)
		if err != nil {
			return configCheck{}, fmt.Errorf("node: cannot record the cluster's settings in the journal stream %s: %w", ConfigStream, err)
		}
		if lastSeq != last {
			lastErr = fmt.Errorf("%w: stream %s grew from seq %d to %d while it was read", persistence.ErrConflict, ConfigStream, last, lastSeq)
			continue // another backend recorded meanwhile: compare with it
		}
		err = j.Append(ctx, ConfigStream, epoch, []persistence.Event{{Seq: last + 1, Msg: mine.toStruct()}})
		if err == nil {
			return configCheck{recorded: true, ratesBefore: rec.rates, changed: found}, nil
		}
		if !errors.Is(err, persistence.ErrFenced) && !errors.Is(err, persistence.ErrConflict) {
			return configCheck{}, fmt.Errorf("node: cannot record the cluster's settings in the journal stream %s: %w", ConfigStream, err)
		}
		lastErr = err // another backend is recording: compare with what it wrote
	}
}

// configRetryPause is the pause before attempt (1, 2, ...) of recording the
// settings: random in [0, 5 ms << attempt), at most 320 ms.
func configRetryPause(attempt int) time.Duration {
	return rand.N(5 * time.Millisecond << min(attempt, 6))
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loadSettings returns the settings of the last event of ConfigStream that
// holds them and the stream's last sequence number.
func loadSettings(ctx context.Context, j persistence.Journal) (s clusterSettings, found bool, last int64, err error) {
	err = j.Load(ctx, ConfigStream, 0, func(e persistence.Event) error {
		last = e.Seq
		if v, ok := settingsFrom(e.Msg); ok {
			s, found = v, true
		}
		return nil
	})
	return s, found, last, err
}

// impliedShards is the number of shards of a journal whose ConfigStream
// records none: the legacy ShardsStream's record, else one when its master
// stream was written (an unsharded journal), else unknown (a fresh one).
func impliedShards(ctx context.Context, j persistence.Journal) (n int, known bool, err error) {
	n, _, err = recordedShards(ctx, j)
	if err != nil {
		return 0, false, fmt.Errorf("node: cannot read the number of shards from the journal: %w", err)
	}
	if n > 0 {
		return n, true, nil
	}
	used, err := streamUsed(ctx, j, master.DefaultStream)
	if err != nil {
		return 0, false, fmt.Errorf("node: cannot read the journal's master stream: %w", err)
	}
	return 1, used, nil
}

func shardsMismatch(mine, recorded int) error {
	return fmt.Errorf("%w: this node was started with %d shard(s) (--shards %d) but the journal records %d; start every node with --shards %d (changing the number of shards is not supported yet)",
		ErrShardsMismatch, mine, mine, recorded, recorded)
}

func ratesMismatch(mine, recorded string) error {
	return fmt.Errorf("%w: this backend was given %s but the journal records %s, the limits of the cluster's first backend; "+
		"start every backend with %s, or, to change the cluster's limits, restart every backend with the new --rate and --change-rate",
		ErrRatesMismatch, rateFlag(mine), rateFlag(recorded), rateFlag(recorded))
}
