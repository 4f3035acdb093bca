package sim

// The cluster-wide rate invariant (issue 35, item 3: "a cluster-wide rate
// is never exceeded in any window beyond its documented failover
// allowance") waits for the throttler's core in the simulator. The hook:
// record each permit grant with h.w.e.now in a serveChecker-like
// grantChecker called from the throttler's adapter, and judge the sliding
// windows in a RateNeverExceeded type in this file, registered in
// Invariants.
