package httpapi

import (
	_ "embed" // the OpenAPI document
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/foreman-actors/foreman/cluster/httpapi/ui"
)

// OpenAPI is the API's OpenAPI 3 document, served at /openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(OpenAPI)
}

// uiCSP keeps the dashboard to its own files: no inline script, nothing from
// elsewhere.
const uiCSP = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"

// handleUI: GET /ui and GET /ui/{file...}, the dashboard's static files.
func (s *Server) handleUI(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean("/"+r.PathValue("file")), "/")
	if name == "" {
		name = "index.html"
	}
	body, err := ui.Files.ReadFile(name)
	if err != nil {
		s.fail(w, r, errNoUIFile(name))
		return
	}
	ct := "text/html; charset=utf-8"
	switch path.Ext(name) {
	case ".css":
		ct = "text/css; charset=utf-8"
	case ".js":
		ct = "text/javascript; charset=utf-8"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write(body)
}

func errNoUIFile(name string) error {
	return fmt.Errorf("%w: the dashboard has no file %s; open /ui", ErrNotFound, name)
}
