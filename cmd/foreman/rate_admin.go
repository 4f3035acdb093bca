package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
)

// nodeRates serves the HTTP API's rate endpoints (httpapi.RateAdmin) from
// a node: it maps the node's errors to the API's status codes and its
// RateStatus to the API's RateInfo.
type nodeRates struct{ n node.RateController }

var _ httpapi.RateAdmin = nodeRates{}

// SetRate implements httpapi.RateAdmin.
func (r nodeRates) SetRate(ctx context.Context, jobType string, rate throttler.Rate, strict bool) error {
	err := r.n.SetRate(ctx, jobType, rate, strict)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, node.ErrNotLimited):
		return fmt.Errorf("%w: %w", httpapi.ErrNotFound, err)
	case errors.Is(err, node.ErrInvalidConfig), errors.Is(err, throttler.ErrInvalidRate):
		return fmt.Errorf("%w: %w", httpapi.ErrInvalid, err)
	default:
		// Not confirmed: the throttler was moving or did not answer in
		// time. Setting the same rate again is safe.
		return fmt.Errorf("%w: the throttler of %q did not confirm the rate; send it again: %w", httpapi.ErrUnavailable, jobType, err)
	}
}

// Rates implements httpapi.RateAdmin.
func (r nodeRates) Rates(ctx context.Context) ([]httpapi.RateInfo, error) {
	sts, err := r.n.Rates(ctx)
	if err != nil && len(sts) == 0 {
		return nil, fmt.Errorf("%w: listing the throttlers: %w", httpapi.ErrUnavailable, err)
	}
	out := make([]httpapi.RateInfo, len(sts))
	for i, st := range sts {
		if st.Err != nil {
			out[i] = httpapi.RateInfo{Type: st.JobType, Error: st.Err.Error()}
			continue
		}
		out[i] = httpapi.NewRateInfo(st.JobType, st.Rate, st.Strict)
		out[i].Node, out[i].Queued, out[i].Granted, out[i].Refused = st.Node, st.Queued, st.Granted, st.Refused
	}
	return out, nil
}
