// Package httpapi is the HTTP front of Foreman's frontend nodes (seed 001: "a
// typical frontend provides a RESTful API that is used by the clients to
// submit (POST) jobs") and a Go client of it.
//
// # Endpoints
//
//	POST /work       {"id": optional, "type": "square", "payload": any JSON}
//	                 201 {"id"} once the work is durable (Location: /work/{id});
//	                 400 malformed input (bad JSON, missing type, unknown field,
//	                 unknown job type); 413 body or payload over the limit;
//	                 503 + Retry-After when the master did not acknowledge in
//	                 time. The same id again is 201 and the job runs once.
//	GET /work/{id}   200 {"id","status","type","result","attempts","last_error"}
//	                 status: accepted|running|done|failed|dead; result is the
//	                 raw JSON when the job produced JSON; 404 unknown id.
//	GET /status      200 members (roles, addresses), where the master runs,
//	                 queue length and counts, idle and busy workers.
//	GET /healthz     200 {"status":"ok"} while the server runs.
//	GET /livez       Kubernetes' probes (cluster/health, WithHealth): 200 "ok"
//	GET /readyz      or 503 naming the failing checks; ?verbose lists them.
//
// Every error answer is {"error": "..."} with a message that says what to fix.
//
// # Layers
//
// The [Server] does not know how the master is reached: it calls a [Backend].
// [ActorBackend] is the real one, over a frontend.Client (a fixed master PID
// in the all-in-one node, a cluster resolver on frontend nodes) and a
// [MembersFunc] for /status ([LocalMembers] in the all-in-one node). Backend
// errors wrap ErrInvalid, ErrTooLarge, ErrNotFound or ErrUnavailable, which
// choose the status code.
//
// The [Client] is the Go client that `foreman submit` and `foreman status`
// use. It names work before the first attempt and retries 503 answers with
// the same id, so a retried submission never runs twice. A load generator
// gives each submitter a [SubmitConn] ([Client.NewSubmitConn]): the same
// answers on one keep-alive connection read on the caller's goroutine, for
// a fraction of the transport's CPU per request (`foreman bench --to` uses
// it).
//
// # Example
//
//	n, _ := node.StartLocal(ctx, node.WithDataDir(dir))
//	backend, _ := httpapi.NewActorBackend(n.Client(), httpapi.LocalMembers(n.System()))
//	srv, _ := httpapi.New(backend, httpapi.WithAddr("127.0.0.1:8001"))
//	if err := srv.Start(ctx); err != nil { ... }
//	defer srv.Shutdown(context.Background())
//
//	c, _ := httpapi.NewClient("127.0.0.1:8001")
//	id, err := c.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("7")})
package httpapi
