// Package core is the membership view as one node sees it, and the
// placement the cluster derives from it: which backends are up, and on
// which of them a shard's master (or any cluster kind) is placed. It is a
// pure core in the shape of actors/effect: no goroutines, no clock, no
// protoactor, no map iteration order, no randomness.
//
// It lives under actors/route because placement is the route's question
// ("where is the master of shard k?"): [ShardOf] and [ShardName], which
// the route package forwards to, are here too, and a frontend core or the
// simulator finds a work's master with ShardOf, ShardKind and [Owner]
// without importing protoactor (actors/route imports it for actor.PID) or
// cluster/ (which the simulator may not import).
//
// # What it models
//
// [View] follows cluster/membership's seed provider (state.go's view):
// every node probes every backend endpoint it knows each Rules.Refresh;
// a member is taken down after Rules.Failures fast failures in a row (a
// crashed process: connection refused), or after Rules.Silence without a
// good answer (paused, overloaded, cut off: the detection delay; a slow
// but live member suspected this way is a false suspicion); a member that
// answers again is re-admitted; one that left, or whose endpoint answers
// for a new incarnation, is gone for good. What is modelled rather than
// run: the HTTP probes themselves and the transitive learning of
// endpoints (a view is given every backend endpoint up front, as seeds).
//
// [Owner] is protoactor's rendezvous hashing (cluster.Rendezvous as the
// pinned version computes it: members sorted by id, descending; those
// hosting the kind; FNV-1a 32 of identity then address; the first highest
// score wins), so the simulator places masters where the real cluster
// would; actors/route's tests check it against protoactor's.
//
// # Driving a View
//
//	v := core.NewView(self, true, endpoints, core.DefaultRules())
//	effs := v.Step(now, core.Start{})         // Probe effects, Timer "refresh"
//	// for each Probe{Addr}: deliver it over the simulated network, then
//	effs = v.Step(now, core.Probed{Addr: a, Result: core.ProbeOK, Member: m})
//	// on effect.Fired{Name: "refresh"}: probe again and expire by silence
//	effs = v.Step(now, effect.Fired{Name: core.TimerRefresh})
//	// a Changed effect carries the new alive members (the topology);
//	owner := v.Owner(kind, identity)          // where this node places it
//
// Effects are carried out in order; Probe effects may be answered in any
// order, late, or never (a lost or silent probe is simply not answered,
// or answered ProbeSilent).
package core
