package metrics

import "github.com/foreman-actors/foreman/cluster/journal"

// CommitObserver returns the function to give a disk journal with
// journal.WithCommitObserver.
func (m *Metrics) CommitObserver() func(journal.CommitStats) {
	return func(st journal.CommitStats) {
		m.commitSeconds.Observe(st.Duration.Seconds())
		if st.Err != nil {
			m.commitErrors.Inc()
			return
		}
		if st.Events > 0 { // lease renewals and snapshots write no events
			m.commitEvents.Observe(float64(st.Events))
		}
	}
}
