package master

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/foreman-actors/foreman/actors/master/core"
)

// ConcurrencyLimits are the running limits per concurrency key: a work
// submitted with Work.concurrency_key runs only while fewer works of its
// key run, cluster-wide (every work of a key lives on the key's shard).
type ConcurrencyLimits = core.ConcurrencyLimits

// WithConcurrencyLimits sets the limits per concurrency key: def for keys
// without their own (below 1: 1), perKey for the others. Every backend of
// a cluster must have the same (the node's --concurrency-limit), as with
// --shards: the master of a key's shard applies them, and a failover to a
// backend with other limits would change them.
func WithConcurrencyLimits(def int, perKey map[string]int) Option {
	return func(c *config) {
		c.concurrency = core.ConcurrencyLimits{Default: def, PerKey: maps.Clone(perKey)}
	}
}

// ParseConcurrencyLimit reads one --concurrency-limit value into limits:
// comma-separated items (as --key-rate), "N" setting the default and
// "KEY=N" one key's limit (N >= 1). A key holds no comma.
func ParseConcurrencyLimit(v string, limits *ConcurrencyLimits) error {
	for item := range strings.SplitSeq(v, ",") {
		if err := parseConcurrencyItem(strings.TrimSpace(item), limits); err != nil {
			return err
		}
	}
	return nil
}

func parseConcurrencyItem(v string, limits *ConcurrencyLimits) error {
	if v == "" {
		return fmt.Errorf("master: concurrency limit: an empty item (a stray comma?); give KEY=N (e.g. tenant-a=2) or N for the default, comma-separated")
	}
	key, n, hasKey := "", v, false
	if i := strings.LastIndexByte(v, '='); i >= 0 { // a key may hold "="
		key, n, hasKey = v[:i], v[i+1:], true
	}
	if hasKey && (key == "" || len(key) > core.MaxKeyLen) {
		return fmt.Errorf("master: concurrency limit %q: the key must be 1-%d bytes; give KEY=N (e.g. tenant-a=2) or N for the default", v, core.MaxKeyLen)
	}
	lim, err := strconv.Atoi(n)
	if err != nil || lim < 1 {
		return fmt.Errorf("master: concurrency limit %q: %q is not a whole number of at least 1; give KEY=N (e.g. tenant-a=2) or N for the default", v, n)
	}
	if !hasKey {
		limits.Default = lim
		return nil
	}
	if limits.PerKey == nil {
		limits.PerKey = make(map[string]int)
	}
	limits.PerKey[key] = lim
	return nil
}
