package httpapi

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/foreman-actors/foreman/messages"
)

// Paths of the HTTP API.
const (
	// PathWork is where work is submitted (POST) and, with "/{id}" appended,
	// read back (GET).
	PathWork = "/work"
	// PathStatus answers the cluster overview (GET).
	PathStatus = "/status"
	// PathHealthz answers 200 while the server runs (GET).
	PathHealthz = "/healthz"
)

// Work statuses as the API names them (GET /work/{id}).
const (
	// StatusAccepted: durable and waiting for a worker.
	StatusAccepted = "accepted"
	// StatusRunning: handed to a worker.
	StatusRunning = "running"
	// StatusDone: completed; the result is set.
	StatusDone = "done"
	// StatusFailed: failed at least once, waiting for its next attempt.
	StatusFailed = "failed"
	// StatusDead: out of attempts (re-submit the same id to run it again).
	StatusDead = "dead"
	// StatusCancelled: its caller stopped waiting (POST /work?wait= whose
	// client left) before it finished; not retried (re-submit the same id
	// to run it again).
	StatusCancelled = "cancelled"
)

// Member roles as /status reports them (the same words as node.Role).
const (
	// RoleAll: backend, frontend and workers in one process.
	RoleAll = "all"
	// RoleBackend: may host the master.
	RoleBackend = "backend"
	// RoleFrontend: serves this HTTP API.
	RoleFrontend = "frontend"
	// RoleWorker: runs workers.
	RoleWorker = "worker"
)

// SubmitRequest is the body of POST /work.
type SubmitRequest struct {
	// ID is the work id; empty lets the server generate one. Submitting
	// the same id again is acknowledged again and the job runs once.
	ID string `json:"id,omitempty"`
	// Type selects the job function on the workers (e.g. "square").
	Type string `json:"type"`
	// Payload is the job input, any JSON value (e.g. 7); it may be absent.
	Payload json.RawMessage `json:"payload,omitempty"`
	// UniqueKey makes the job unique by key (docs/scheduling.md): while a
	// job with the same key is pending or running, or finished (done or
	// dead) less than its UniqueFor ago, a submission is answered 200 with
	// that job's id and status and not run.
	UniqueKey string `json:"unique_key,omitempty"`
	// UniqueFor is how long a finished job keeps its unique key, a Go
	// duration ("1h"); empty or "0s": only while pending or running.
	UniqueFor string `json:"unique_for,omitempty"`
	// ConcurrencyKey caps how many jobs sharing it run at once, in the
	// whole cluster (the backends' --concurrency-limit).
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	// RunAt delays the job until this time, RFC 3339 (e.g.
	// "2026-11-28T10:00:00Z"); a time past runs it at once. Not with Delay.
	RunAt string `json:"run_at,omitempty"`
	// Delay delays the job by a Go duration from the server's receipt of
	// the request (e.g. "90s", "1h30m"). Not with RunAt.
	Delay string `json:"delay,omitempty"`
	// Priority is 0 (lowest) to 9 (highest); absent: 5. A higher priority
	// is handed out first within a job type (docs/scheduling.md).
	Priority *int `json:"priority,omitempty"`
	// FairnessKey (a tenant, a customer): within a job type the hand-out
	// rotates over the keys with waiting jobs, so one key's flood does not
	// hold the others back.
	FairnessKey string `json:"fairness_key,omitempty"`
	// HeartbeatTimeout is this job's heartbeat timeout, a Go duration
	// ("90s", "5m"): once the job heartbeats (worker.Heartbeat), the master
	// times it out when no heartbeat follows within it, over its job type's
	// (docs/long-jobs.md). Empty: the job type's.
	HeartbeatTimeout string `json:"heartbeat_timeout,omitempty"`
}

// MaxHeartbeatTimeout bounds SubmitRequest.HeartbeatTimeout: a job silent
// for longer is better watched by its work timeout.
const MaxHeartbeatTimeout = 24 * time.Hour

// checkHeartbeatTimeout checks SubmitRequest.HeartbeatTimeout.
func checkHeartbeatTimeout(v string) error {
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Millisecond || d > MaxHeartbeatTimeout {
		return fmt.Errorf(`%w: "heartbeat_timeout" %.30q must be a Go duration from 1ms to %v, e.g. {"type":"long","payload":"60s","heartbeat_timeout":"30s"}`,
			ErrInvalid, v, MaxHeartbeatTimeout)
	}
	return nil
}

// SubmitResponse is the body of a 201 answer to POST /work: the work is
// durable.
type SubmitResponse struct {
	// ID is the work id (the generated one when the request had none), or
	// the id of the job whose unique key the submission matched.
	ID string `json:"id"`
	// DuplicateOf is set (to ID) in a 200: the submission's unique key
	// matched that job, which it was not run beside.
	DuplicateOf string `json:"duplicate_of,omitempty"`
	// Status is the status of the DuplicateOf job when it was matched.
	Status string `json:"status,omitempty"`
}

// WorkInfo is the body of GET /work/{id}.
type WorkInfo struct {
	// ID is the work id.
	ID string `json:"id"`
	// Status is one of StatusAccepted, StatusRunning, StatusDone,
	// StatusFailed, StatusDead.
	Status string `json:"status"`
	// Type is the job type.
	Type string `json:"type,omitempty"`
	// Result is the job's result: the raw JSON when the worker produced
	// JSON, a JSON string otherwise, null while there is none.
	Result json.RawMessage `json:"result"`
	// Attempts counts the hand-outs to workers so far.
	Attempts int32 `json:"attempts"`
	// LastError is the error of the latest failed attempt, if any.
	LastError string `json:"last_error,omitempty"`
	// History is what happened to the job, oldest first (bounded: the
	// first transitions and the latest ones); GET /work/{id} includes it
	// when asked with ?history=true.
	History []HistoryEntry `json:"history,omitempty"`
	// Progress is the running job's latest progress (worker.Progress), if
	// it reported any; absent otherwise. Not journaled: after a failover it
	// is absent until the job's next heartbeat (docs/long-jobs.md).
	Progress *ProgressInfo `json:"progress,omitempty"`
	// Heartbeat is when the master last heard a heartbeat of the running
	// job (RFC 3339), if it did.
	Heartbeat *time.Time `json:"heartbeat,omitempty"`
}

// ProgressInfo is a running job's latest progress.
type ProgressInfo struct {
	// Fraction is how far the job is, from 0 to 1.
	Fraction float64 `json:"fraction"`
	// Message is what the job said it does.
	Message string `json:"message,omitempty"`
}

// StatusInfo is the body of GET /status: the members of the cluster, where
// the master runs, its queue and its workers. A cluster-backed [Backend]
// fills Members from the membership; the all-in-one node reports itself.
type StatusInfo struct {
	// Members are the nodes of the cluster, in a stable order.
	Members []Member `json:"members"`
	// Master says where the master runs and whether it answered.
	Master MasterInfo `json:"master"`
	// Queue counts the master's work (valid when Master.Reachable).
	Queue QueueInfo `json:"queue"`
	// Workers counts the workers registered with the master.
	Workers WorkersInfo `json:"workers"`
	// Shards, in a cluster of several shards (masters), says for each where
	// its master runs, its queue and its workers; Master is then shard 0's,
	// and Queue and Workers are the sums over the shards that answered.
	// Empty with one shard.
	Shards []ShardInfo `json:"shards,omitempty"`
	// Throttlers, in a cluster with cluster-wide rate limits (--rate on the
	// backends), says where each limited job type's throttler runs. Empty
	// without such limits.
	Throttlers []ThrottlerInfo `json:"throttlers,omitempty"`
}

// ThrottlerInfo is one job type's throttler in GET /status.
type ThrottlerInfo struct {
	// JobType is the limited job type.
	JobType string `json:"job_type"`
	// Address is the actor system address of the node hosting it.
	Address string `json:"address,omitempty"`
	// Member is the ID of that node, when known.
	Member string `json:"member,omitempty"`
	// Error says why it was not found (Address is then empty).
	Error string `json:"error,omitempty"`
}

// ShardInfo is one shard's master in GET /status.
type ShardInfo struct {
	// Shard is the shard's number (0..N-1); its master is master/Shard.
	Shard int `json:"shard"`
	// Master says where the shard's master runs and its epoch.
	Master MasterInfo `json:"master"`
	// Queue counts the shard's work (valid when Master.Reachable).
	Queue QueueInfo `json:"queue"`
	// Workers counts the workers registered with the shard's master.
	Workers WorkersInfo `json:"workers"`
}

// Member is one node of the cluster.
type Member struct {
	// ID identifies the node (its actor system id or cluster member id).
	ID string `json:"id"`
	// Address is the node's actor system address (host:port; "nonhost"
	// for an all-in-one node without remoting).
	Address string `json:"address"`
	// Roles are the node's roles: RoleAll, RoleBackend, RoleFrontend,
	// RoleWorker.
	Roles []string `json:"roles"`
	// Kinds are the cluster kinds the node hosts (none for clients).
	Kinds []string `json:"kinds,omitempty"`
	// Client marks a cluster client (a frontend or worker node that is not
	// in the cluster's member list).
	Client bool `json:"client,omitempty"`
	// HTTP is the node's HTTP API address, when it serves one.
	HTTP string `json:"http,omitempty"`
	// Self marks the node that answered this request.
	Self bool `json:"self,omitempty"`
	// Master marks the node that hosts the master.
	Master bool `json:"master,omitempty"`
}

// MasterInfo says where the master runs.
type MasterInfo struct {
	// Reachable reports whether the master answered the status request.
	Reachable bool `json:"reachable"`
	// Address is the actor system address of the master's node.
	Address string `json:"address,omitempty"`
	// Member is the ID of the member that hosts the master, when known.
	Member string `json:"member,omitempty"`
	// Epoch is the master's journal epoch: a new one for every activation
	// (failover, restart).
	Epoch int64 `json:"epoch,omitempty"`
	// Error says why the master did not answer (when not Reachable).
	Error string `json:"error,omitempty"`
}

// QueueInfo counts the master's work.
type QueueInfo struct {
	// Pending is the queue length: accepted or failed work waiting for a
	// worker.
	Pending int64 `json:"pending"`
	// InProgress is work handed to workers and not yet done.
	InProgress int64 `json:"in_progress"`
	// Done is completed work the master still remembers.
	Done int64 `json:"done"`
	// Dead is work out of attempts.
	Dead int64 `json:"dead"`
	// Cancelled is work whose caller stopped waiting (POST /work?wait=).
	Cancelled int64 `json:"cancelled"`
	// AcceptedTotal counts every work accepted since the journal began.
	AcceptedTotal int64 `json:"accepted_total"`
}

// WorkersInfo counts the workers registered with the master.
type WorkersInfo struct {
	// Idle workers run no work.
	Idle int64 `json:"idle"`
	// Busy workers run at least one work.
	Busy int64 `json:"busy"`
}

// errorBody is the body of every error answer: {"error": "..."}.
type errorBody struct {
	Error string `json:"error"`
}

// statusName maps the master's WorkStatus to the API's word; ok is false for
// WORK_STATUS_UNKNOWN (and values this version does not know).
func statusName(s messages.WorkStatus) (name string, ok bool) {
	switch s {
	case messages.WorkStatus_WORK_STATUS_ACCEPTED:
		return StatusAccepted, true
	case messages.WorkStatus_WORK_STATUS_RUNNING:
		return StatusRunning, true
	case messages.WorkStatus_WORK_STATUS_DONE:
		return StatusDone, true
	case messages.WorkStatus_WORK_STATUS_FAILED:
		return StatusFailed, true
	case messages.WorkStatus_WORK_STATUS_DEAD:
		return StatusDead, true
	case messages.WorkStatus_WORK_STATUS_CANCELLED:
		return StatusCancelled, true
	default:
		return "", false
	}
}

// WorkInfoFromReply converts the master's answer into the API's view; ok is
// false when the master does not know the work.
func WorkInfoFromReply(r *messages.WorkStatusReply) (info WorkInfo, ok bool) {
	name, ok := statusName(r.GetStatus())
	if !ok {
		return WorkInfo{ID: r.GetWorkId()}, false
	}
	info = WorkInfo{
		ID:        r.GetWorkId(),
		Status:    name,
		Type:      r.GetJobType(),
		Result:    resultJSON(r.GetResult()),
		Attempts:  r.GetAttempts(),
		LastError: r.GetLastError(),
		History:   historyFromReply(r.GetHistory()),
	}
	if r.GetHasProgress() {
		info.Progress = &ProgressInfo{Fraction: r.GetProgress(), Message: r.GetProgressMessage()}
	}
	if ns := r.GetHeartbeatUnixNano(); ns != 0 {
		at := time.Unix(0, ns).UTC()
		info.Heartbeat = &at
	}
	return info, true
}

// resultJSON renders a job result as JSON: itself when it is valid JSON, a
// JSON string of it otherwise, null when empty. The output is always valid
// JSON.
func resultJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	s, _ := json.Marshal(string(b)) // cannot fail for a string
	return s
}
