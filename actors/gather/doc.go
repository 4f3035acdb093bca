// Package gather makes concurrent calls that each carry one item travel
// together: a caller's item waits only while the receiver is busy with
// earlier groups, then goes with every item that arrived meanwhile in one
// request, and each caller gets its own item's answer.
//
// Foreman uses it where one request per item costs more CPU than the work
// it asks for: the frontend's Client gathers the single submissions of
// concurrent POST /work requests into WorkBatch messages to their shard's
// master, and the HTTP API's Go client gathers concurrent Submit calls
// into POST /work/batch requests (docs/benchmarks/issue39-cpu.md has what
// each saves).
//
// [Group] is the decision (which items go together, and when) as a pure
// value; [Gatherer] is the shell that runs it for goroutines: it blocks
// each caller until its answer comes or its ctx ends, sends each group on
// a goroutine of its own, and stops waiting for a group's answer once
// every caller in it has left.
package gather
