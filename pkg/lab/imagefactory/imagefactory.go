// Package imagefactory is the lab's Talos Image Factory: POST /schematics
// (ids computed exactly like the real factory), GET /schematics/<id>,
// GET /versions, and GET /image/<id>/<version>/<artifact> serving a small,
// deterministic artifact for every known schematic and version (or bytes a
// test registered); artifacts named *.xz are real xz streams of the
// placeholder, so clients prove their decompression. It listens on loopback only, records every call and
// honours the lab's fault knobs.
//
// Not simulated: overlays, SecureBoot signing, PXE/kernel/initramfs
// endpoints, the frontend, and real image contents (artifacts are
// placeholders whose bytes encode what was asked for).
package imagefactory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	ifschematic "github.com/siderolabs/image-factory/pkg/schematic"
	"github.com/ulikunitz/xz"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// Service is the name the lab records this service's calls under.
const Service = "imagefactory"

// Options configure a Factory.
type Options struct {
	// Addr is the loopback listen address; "" means 127.0.0.1:0.
	Addr string
	// Versions are the Talos versions GET /versions lists.
	Versions []string
	// KubeletTags are the tags of the kubelet repository the lab's registry
	// lists (default DefaultKubeletTags).
	KubeletTags []string
	// TagsPageSize caps a tags-list page (0: as many as asked for).
	TagsPageSize int
	// ArtifactSize is the size of generated artifacts (default 4096); for
	// *.xz artifacts, the size once decompressed.
	ArtifactSize int
	// Injector and Recorder are the lab's; nil means none / a private one.
	Injector *labnet.Injector
	Recorder *labnet.Recorder
}

// Factory is a running lab Image Factory.
type Factory struct {
	// URL is the base URL ("http://127.0.0.1:port").
	URL string

	opts   Options
	srv    *http.Server
	mu     sync.Mutex
	known  map[string]string // id → normalised schematic YAML
	images map[string][]byte
	// unhandled is called for requests no route serves (tests fail on it).
	unhandled func(method, path string)
}

// Start listens and serves until ctx ends or Close is called.
func Start(ctx context.Context, o Options) (*Factory, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.ArtifactSize <= 0 {
		o.ArtifactSize = 4096
	}
	if o.KubeletTags == nil {
		o.KubeletTags = DefaultKubeletTags()
	}
	if o.Recorder == nil {
		o.Recorder = &labnet.Recorder{}
	}
	l, err := labnet.Listen(ctx, o.Addr)
	if err != nil {
		return nil, fmt.Errorf("image factory: %w", err)
	}
	f := &Factory{URL: "http://" + l.Addr().String(), opts: o, known: map[string]string{}, images: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /schematics", f.createSchematic)
	mux.HandleFunc("GET /schematics/{id}", f.getSchematic)
	mux.HandleFunc("GET /versions", f.listVersions)
	mux.HandleFunc("GET /image/{id}/{version}/{artifact}", f.image)
	f.registryRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if f.unhandled != nil {
			f.unhandled(r.Method, r.URL.Path)
		}
		http.Error(w, "not implemented by the lab image factory", http.StatusNotImplemented)
	})
	f.srv = &http.Server{Handler: labnet.Middleware(Service, o.Injector, o.Recorder, mux), ReadHeaderTimeout: labnet.ReadHeaderTimeout}
	go func() { _ = f.srv.Serve(l) }()
	context.AfterFunc(ctx, func() { _ = f.Close() })
	return f, nil
}

// OnUnhandled sets a callback for requests no route serves.
func (f *Factory) OnUnhandled(fn func(method, path string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unhandled = fn
}

// Close stops the server.
func (f *Factory) Close() error { return f.srv.Close() }

// Recorder returns the recorder of this factory's calls.
func (f *Factory) Recorder() *labnet.Recorder { return f.opts.Recorder }

// AddImage serves exactly data at /image/<schematicID>/<version>/<artifact>.
func (f *Factory) AddImage(schematicID, version, artifact string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[imageKey(schematicID, version, artifact)] = slices.Clone(data)
}

// Schematics returns every schematic created so far, id → YAML.
func (f *Factory) Schematics() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.known)
}

// Extensions returns the official extensions of a known schematic; the
// simulated Talos nodes report them.
func (f *Factory) Extensions(id string) ([]string, bool) {
	f.mu.Lock()
	text, ok := f.known[id]
	f.mu.Unlock()
	if !ok {
		return nil, false
	}
	sc, err := ifschematic.Unmarshal([]byte(text))
	if err != nil {
		return nil, false
	}
	return slices.Clone(sc.Customization.SystemExtensions.OfficialExtensions), true
}

// Artifact returns the bytes served for an image: a registered one, or the
// deterministic placeholder for a known schematic and version, xz-compressed
// when the artifact's name ends in ".xz".
func (f *Factory) Artifact(id, version, artifact string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if data, ok := f.images[imageKey(id, version, artifact)]; ok {
		return data, true
	}
	if _, ok := f.known[id]; !ok || !slices.Contains(f.opts.Versions, version) {
		return nil, false
	}
	data := placeholder(id, version, artifact, f.opts.ArtifactSize)
	if strings.HasSuffix(artifact, ".xz") {
		return compress(data), true
	}
	return data, true
}

func (f *Factory) createSchematic(w http.ResponseWriter, r *http.Request) {
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
	f.mu.Lock()
	f.known[id] = string(norm)
	f.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]string{"id": id, "schematic": string(norm)})
}

func (f *Factory) getSchematic(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	text, ok := f.known[r.PathValue("id")]
	f.mu.Unlock()
	if !ok {
		http.Error(w, "schematic not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = io.WriteString(w, text)
}

func (f *Factory) listVersions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, slices.Clone(f.opts.Versions))
}

// image serves an artifact with its Content-Length, else 404 like the
// factory.
func (f *Factory) image(w http.ResponseWriter, r *http.Request) {
	data, ok := f.Artifact(r.PathValue("id"), r.PathValue("version"), r.PathValue("artifact"))
	if !ok {
		http.Error(w, fmt.Sprintf("image %s not found", strings.TrimPrefix(r.URL.Path, "/image/")), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// placeholder is a deterministic artifact: a header naming what was asked
// for, padded with a sha256 stream of it.
func placeholder(id, version, artifact string, size int) []byte {
	head := fmt.Sprintf("talosc-lab image\nschematic: %s\nversion: %s\nartifact: %s\n", id, version, artifact)
	out := make([]byte, 0, size)
	out = append(out, head...)
	block := sha256.Sum256([]byte(head))
	for len(out) < size {
		out = append(out, block[:]...)
		block = sha256.Sum256(block[:])
	}
	return out[:size]
}

// compress returns data as one xz stream; the encoder writes no
// timestamps, so the same data always compresses to the same bytes.
func compress(data []byte) []byte {
	var b bytes.Buffer
	w, err := xz.NewWriter(&b)
	if err == nil {
		_, err = w.Write(data)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		panic("xz into memory: " + err.Error()) // a bytes.Buffer never fails
	}
	return b.Bytes()
}

func imageKey(id, version, artifact string) string { return id + "/" + version + "/" + artifact }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
