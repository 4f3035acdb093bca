package master

import (
	"fmt"
	"maps"
	"strings"

	"github.com/foreman-actors/foreman/actors/master/core"
	throttle "github.com/foreman-actors/foreman/actors/throttler/core"
)

// KeyRate is a concurrency key's hand-out rate: at most Calls hand-outs of
// the key's works in any window of Per (a sliding window, the throttler's
// strict rule), held by the master of the key's shard across failovers.
type KeyRate = core.KeyRate

// KeyRates are the hand-out rates per concurrency key.
type KeyRates = core.KeyRates

// KeyRateSyntax describes what ParseKeyRates accepts; errors quote it.
const KeyRateSyntax = `KEY=N/PERIOD for one key or N/PERIOD for every other key, comma-separated; ` +
	`PERIOD s, m, h or a Go duration such as 500ms; e.g. "tenant-a=10/s,100/m"`

// WithKeyRates sets the hand-out rates per concurrency key (default: none,
// keys are unlimited). Every backend of a cluster must have the same (the
// node's --key-rate), as with WithConcurrencyLimits.
func WithKeyRates(r KeyRates) Option {
	return func(c *config) {
		c.keyRates = core.KeyRates{Default: r.Default, PerKey: maps.Clone(r.PerKey)}
	}
}

// ParseKeyRates reads one --key-rate value (see KeyRateSyntax) into rates.
func ParseKeyRates(v string, rates *KeyRates) error {
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		bad := func(why string, args ...any) error {
			return fmt.Errorf("master: key rate %q: %s; want %s", item, fmt.Sprintf(why, args...), KeyRateSyntax)
		}
		if item == "" {
			return bad("empty item (a stray comma?)")
		}
		key, rate, hasKey := "", item, false
		if i := strings.LastIndexByte(item, '='); i >= 0 { // a key may hold "="
			key, rate, hasKey = item[:i], item[i+1:], true
		}
		if hasKey && (key == "" || len(key) > core.MaxKeyLen) {
			return bad("the key must be 1-%d bytes", core.MaxKeyLen)
		}
		r, err := ParseKeyRate(rate)
		if err != nil {
			return fmt.Errorf("master: key rate %q: %w", item, err)
		}
		if !hasKey {
			rates.Default = r
			continue
		}
		if rates.PerKey == nil {
			rates.PerKey = make(map[string]KeyRate)
		}
		rates.PerKey[key] = r
	}
	return nil
}

// ParseKeyRate reads a rate N/PERIOD such as "10/s", "100/m" or "5/500ms"
// with the throttler's one parser (actors/throttler/core.ParseRate), and
// bounds its count at core.MaxKeyRateCalls.
func ParseKeyRate(s string) (KeyRate, error) {
	r, err := throttle.ParseRate(s)
	if err != nil {
		return KeyRate{}, err
	}
	kr := KeyRate{Calls: r.Calls, Per: r.Per}
	if err := kr.Validate(); err != nil {
		return KeyRate{}, fmt.Errorf("rate %q: %w", s, err)
	}
	return kr, nil
}

// FormatKeyRate writes r as ParseKeyRate reads it ("10/s", "5/500ms").
func FormatKeyRate(r KeyRate) string {
	return throttle.FormatRate(throttle.Rate{Calls: r.Calls, Per: r.Per})
}
