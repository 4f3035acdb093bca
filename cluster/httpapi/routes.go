package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/foreman-actors/foreman/cluster/health"
)

// Route is one entry of the API's route table. Every route of the server
// is in the table, so the token check wraps them all and tests can walk
// them (see [Server.Routes]).
type Route struct {
	// Method is the HTTP method, "" for the fallback that answers 405 (or
	// 404 on "/") for every other method.
	Method string
	// Path is the http.ServeMux path pattern, e.g. "/work/{id}".
	Path string
	// Public routes are served without a bearer token. Only routes that
	// carry no data may be public: /healthz says only that the server runs,
	// /livez and /readyz name their checks and withhold the reasons.
	Public bool

	handler http.HandlerFunc
}

// Pattern returns the route's http.ServeMux pattern.
func (r Route) Pattern() string {
	if r.Method == "" {
		return r.Path
	}
	return r.Method + " " + r.Path
}

// routeTable lists every route of the API. Handlers of new endpoints join
// it here, with their 405 fallback. Public routes carry no data: the
// health check, the OpenAPI document and the dashboard's static files
// (the page sends the token on its API calls, which stay protected).
func (s *Server) routeTable() []Route {
	t := []Route{
		{Method: http.MethodPost, Path: PathWork, handler: s.timeSubmit(s.traceSubmit(s.handleSubmit))},
		{Method: http.MethodPost, Path: PathWorkBatch, handler: s.traceSubmit(s.handleSubmitBatch)},
		{Method: http.MethodGet, Path: PathWork, handler: s.handleList},
		{Method: http.MethodGet, Path: PathWork + "/{id}", handler: s.handleWork},
		{Method: http.MethodPost, Path: PathWork + "/{id}" + PathResubmit, handler: s.handleResubmit},
		{Method: http.MethodGet, Path: PathStatus, handler: s.handleStatus},
		{Method: http.MethodGet, Path: PathQueues, handler: s.handleQueues},
		{Method: http.MethodPost, Path: PathQueues + "/{type}" + PathQueuePause, handler: s.handlePause(true)},
		{Method: http.MethodPost, Path: PathQueues + "/{type}" + PathQueueResume, handler: s.handlePause(false)},
		{Method: http.MethodGet, Path: PathResults, handler: s.handleResults},
		{Method: http.MethodGet, Path: PathResultsStream, handler: s.handleResultsStream},
		{Method: http.MethodGet, Path: PathRates, handler: s.handleRates},
		{Method: http.MethodPut, Path: PathRates + "/{type}", handler: s.handleSetRate},
		{Method: http.MethodGet, Path: PathLimits, handler: s.handleLimits},
		{Method: http.MethodPut, Path: PathLimits + "/{key}", handler: s.handleSetLimit(false)},
		{Method: http.MethodDelete, Path: PathLimits + "/{key}", handler: s.handleSetLimit(true)},
		{Method: http.MethodGet, Path: PathHealthz, Public: true, handler: s.handleHealthz},
		{Method: http.MethodGet, Path: health.PathLivez, Public: true, handler: s.cfg.health.LivezHandler().ServeHTTP},
		{Method: http.MethodGet, Path: health.PathReadyz, Public: true, handler: s.cfg.health.ReadyzHandler().ServeHTTP},
		{Method: http.MethodGet, Path: PathOpenAPI, Public: true, handler: s.handleOpenAPI},
		{Method: http.MethodGet, Path: PathUI, Public: true, handler: s.handleUI},
		{Method: http.MethodGet, Path: PathUI + "/{file...}", Public: true, handler: s.handleUI},
	}
	t = append(t, s.scheduleRoutes()...)
	if s.cfg.metrics != nil {
		t = append(t,
			Route{Method: http.MethodGet, Path: PathMetrics, handler: s.cfg.metrics.Handler().ServeHTTP},
			Route{Path: PathMetrics, handler: methodNotAllowed("GET, HEAD")})
	}
	return append(t,
		Route{Path: PathWork, handler: methodNotAllowed("GET, HEAD, POST")},
		Route{Path: PathWork + "/{id}", handler: workIDNotAllowed},
		Route{Path: PathWork + "/{id}" + PathResubmit, handler: methodNotAllowed(http.MethodPost)},
		Route{Path: PathStatus, handler: methodNotAllowed("GET, HEAD")},
		Route{Path: PathQueues, handler: methodNotAllowed("GET, HEAD")},
		Route{Path: PathQueues + "/{type}" + PathQueuePause, handler: methodNotAllowed(http.MethodPost)},
		Route{Path: PathQueues + "/{type}" + PathQueueResume, handler: methodNotAllowed(http.MethodPost)},
		Route{Path: PathResults, handler: methodNotAllowed("GET, HEAD")},
		Route{Path: PathResultsStream, handler: methodNotAllowed("GET, HEAD")},
		Route{Path: PathRates, handler: methodNotAllowed("GET, HEAD")},
		Route{Path: PathRates + "/{type}", handler: methodNotAllowed(http.MethodPut)},
		Route{Path: PathLimits, handler: methodNotAllowed("GET, HEAD")},
		Route{Path: PathLimits + "/{key}", handler: methodNotAllowed("PUT, DELETE")},
		Route{Path: PathHealthz, Public: true, handler: methodNotAllowed("GET, HEAD")},
		Route{Path: health.PathLivez, Public: true, handler: methodNotAllowed("GET, HEAD")},
		Route{Path: health.PathReadyz, Public: true, handler: methodNotAllowed("GET, HEAD")},
		Route{Path: PathOpenAPI, Public: true, handler: methodNotAllowed("GET, HEAD")},
		Route{Path: PathUI, Public: true, handler: methodNotAllowed("GET, HEAD")},
		Route{Path: "/", handler: s.notFound},
	)
}

// Routes returns the server's route table: method, path pattern and
// whether it is public.
func (s *Server) Routes() []Route {
	t := s.routeTable()
	for i := range t {
		t[i].handler = nil
	}
	return t
}

// routes builds the handler: every route that is not public goes through
// the bearer-token check when the server has tokens.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, r := range s.routeTable() {
		h := http.Handler(r.handler)
		if !r.Public {
			h = s.requireToken(h)
		}
		mux.Handle(r.Pattern(), h)
	}
	return mux
}

// notFound answers a path the API does not have, listing the endpoints.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	var eps []string
	for _, rt := range s.routeTable() {
		if rt.Method != "" {
			eps = append(eps, rt.Method+" "+rt.Path)
		}
	}
	writeJSON(w, http.StatusNotFound, errorBody{Error: fmt.Sprintf("no endpoint %s %s; the API has %s", r.Method, r.URL.Path, strings.Join(eps, ", "))})
}

// workIDNotAllowed is the 405 of /work/{id}, which also answers for
// /work/batch: a fallback of its own would clash with GET /work/{id} in the
// mux (GET /work/batch reads the work whose id is "batch").
func workIDNotAllowed(w http.ResponseWriter, r *http.Request) {
	allow := "GET, HEAD"
	if r.URL.Path == PathWorkBatch {
		allow = "GET, HEAD, POST"
	}
	methodNotAllowed(allow)(w, r)
}
