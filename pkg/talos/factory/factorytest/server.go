// Package factorytest runs a loopback fake of the Talos Image Factory API
// for tests: POST /schematics (ids computed like the real factory),
// GET /versions and GET /image/<id>/<version>/<artifact> for images a test
// registered. Unknown routes fail the test.
package factorytest

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	ifschematic "github.com/siderolabs/image-factory/pkg/schematic"
)

// Server is a fake Image Factory listening on 127.0.0.1.
type Server struct {
	// URL is the base URL to hand to factory.New.
	URL string

	srv      *httptest.Server
	mu       sync.Mutex
	versions []string
	images   map[string][]byte
	created  map[string]string
	requests []string
}

// NewServer starts a fake factory serving versions (the Talos versions
// GET /versions lists) and registers its shutdown with t.Cleanup.
func NewServer(tb testing.TB, versions ...string) *Server {
	tb.Helper()
	s := &Server{versions: versions, images: map[string][]byte{}, created: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /schematics", s.createSchematic)
	mux.HandleFunc("GET /versions", s.listVersions)
	mux.HandleFunc("GET /image/{id}/{version}/{artifact}", s.image)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		tb.Errorf("factorytest: unhandled request %s %s", r.Method, r.URL.Path)
		http.Error(w, "not implemented by factorytest", http.StatusNotImplemented)
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	return s
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client {
	return s.srv.Client()
}

// AddImage serves data at /image/<schematicID>/<version>/<artifact>.
func (s *Server) AddImage(schematicID, version, artifact string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images[imageKey(schematicID, version, artifact)] = data
}

// Schematics returns the schematics created so far, id → YAML.
func (s *Server) Schematics() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.created)
}

// Requests returns "METHOD /path" for every request received, in order.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// record appends r to the request log.
func (s *Server) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
}

// createSchematic mirrors the factory: parse strictly, id = sha256 of the
// re-marshalled schematic, 201 with {"id", "schematic"}.
func (s *Server) createSchematic(w http.ResponseWriter, r *http.Request) {
	s.record(r)
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	sc, err := ifschematic.Unmarshal(data)
	if err != nil {
		http.Error(w, "invalid schematic: "+err.Error(), http.StatusBadRequest)
		return
	}
	id, err := sc.ID()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	norm, err := sc.Marshal()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.mu.Lock()
	s.created[id] = string(norm)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]string{"id": id, "schematic": string(norm)})
}

// listVersions serves the configured versions.
func (s *Server) listVersions(w http.ResponseWriter, r *http.Request) {
	s.record(r)
	s.mu.Lock()
	versions := append([]string{}, s.versions...)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, versions)
}

// image serves a registered image with its Content-Length, else 404.
func (s *Server) image(w http.ResponseWriter, r *http.Request) {
	s.record(r)
	s.mu.Lock()
	data, ok := s.images[imageKey(r.PathValue("id"), r.PathValue("version"), r.PathValue("artifact"))]
	s.mu.Unlock()
	if !ok {
		http.Error(w, fmt.Sprintf("image %s not found", strings.TrimPrefix(r.URL.Path, "/image/")), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// imageKey joins the image path parameters.
func imageKey(id, version, artifact string) string {
	return id + "/" + version + "/" + artifact
}

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
