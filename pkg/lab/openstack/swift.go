package openstack

import (
	"crypto/md5" //nolint:gosec // Swift's ETag is the MD5 of the object
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Swift's object API (v1) as the real lab's proxy with keystoneauth
// serves it: the account is AUTH_<project id>, reachable only with a
// token of that project (another project's token is 403, as
// keystoneauth answers a user without a role there), and created on its
// first use (account_autocreate). Objects are kept in memory.

// swiftStore is every project's account.
type swiftStore struct {
	mu       sync.Mutex
	accounts map[string]map[string]*swiftContainer // project id → container name →
}

// swiftContainer is one container: its metadata and objects.
type swiftContainer struct {
	meta    map[string]string // X-Container-Meta-<key> (canonical key) → value
	objects map[string]*swiftObject
	created time.Time
}

// swiftObject is one stored object.
type swiftObject struct {
	data        []byte
	etag        string // hex MD5 of data
	contentType string
	meta        map[string]string
	modified    time.Time
}

const (
	swiftMetaContainer = "X-Container-Meta-"
	swiftMetaObject    = "X-Object-Meta-"
	// swiftListLimit is the proxy's container_listing_limit.
	swiftListLimit = 10000
	swiftTimeList  = "2006-01-02T15:04:05.000000"
)

// swiftError writes e as Swift's HTML error page.
func swiftError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "text/html; charset=UTF-8")
	w.WriteHeader(e.code)
	_, _ = fmt.Fprintf(w, "<html><h1>%s</h1><p>%s</p></html>", http.StatusText(e.code), e.msg)
}

func (s *Cloud) swift(h handler) http.HandlerFunc {
	return s.serve(dialect{writeErr: swiftError, check: swiftCheck}, h)
}

// swiftCheck refuses an account that is not the token's project's.
func swiftCheck(c *call) *apiError {
	if c.r.PathValue("account") != "AUTH_"+c.t.project {
		return errf(http.StatusForbidden, "", "Access was denied to this resource.")
	}
	return nil
}

// swiftLocked is s.swift(h) with h run under the store's lock.
func (s *Cloud) swiftLocked(h handler) http.HandlerFunc {
	return s.swift(func(c *call) (any, error) {
		s.swiftStore.mu.Lock()
		defer s.swiftStore.mu.Unlock()
		return h(c)
	})
}

func (s *Cloud) swiftMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /info", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"swift": map[string]any{"version": "2.30.1", "container_listing_limit": swiftListLimit}})
	})
	mux.HandleFunc("GET /v1/{account}", s.swiftLocked(s.swiftStore.swiftAccount))
	mux.HandleFunc("GET /v1/{account}/{$}", s.swiftLocked(s.swiftStore.swiftAccount))
	mux.HandleFunc("PUT /v1/{account}/{container}", s.swiftLocked(s.swiftStore.swiftPutContainer))
	mux.HandleFunc("POST /v1/{account}/{container}", s.swiftLocked(s.swiftStore.swiftPostContainer))
	mux.HandleFunc("GET /v1/{account}/{container}", s.swiftLocked(s.swiftStore.swiftGetContainer))
	mux.HandleFunc("DELETE /v1/{account}/{container}", s.swiftLocked(s.swiftStore.swiftDeleteContainer))
	mux.HandleFunc("PUT /v1/{account}/{container}/{object...}", s.swift(s.swiftPutObject))
	mux.HandleFunc("GET /v1/{account}/{container}/{object...}", s.swift(s.swiftGetObject))
	mux.HandleFunc("DELETE /v1/{account}/{container}/{object...}", s.swiftLocked(s.swiftStore.swiftDeleteObject))
	mux.HandleFunc("/", s.catchAll(Swift))
	return mux
}

// account is the token's project's containers (created on first use).
func (st *swiftStore) account(project string) map[string]*swiftContainer {
	a, ok := st.accounts[project]
	if !ok {
		a = map[string]*swiftContainer{}
		st.accounts[project] = a
	}
	return a
}

// container is the call's container, or Swift's 404.
func (st *swiftStore) container(c *call) (*swiftContainer, *apiError) {
	ct, ok := st.account(c.t.project)[c.r.PathValue("container")]
	if !ok {
		return nil, errf(http.StatusNotFound, "", "The resource could not be found.")
	}
	return ct, nil
}

// swiftAccount serves HEAD and GET of the account: its counts and, for
// GET, its containers.
func (st *swiftStore) swiftAccount(c *call) (any, error) {
	a := st.account(c.t.project)
	var objects, bytes int64
	var rows []map[string]any
	for _, ct := range a {
		n, b := ct.usage()
		objects, bytes = objects+n, bytes+b
	}
	for _, name := range swiftPage(c.r.URL.Query(), a) {
		n, b := a[name].usage()
		rows = append(rows, map[string]any{"name": name, "count": n, "bytes": b, "last_modified": a[name].created.UTC().Format(swiftTimeList)})
	}
	h := c.w.Header()
	h.Set("X-Account-Container-Count", strconv.Itoa(len(a)))
	h.Set("X-Account-Object-Count", strconv.FormatInt(objects, 10))
	h.Set("X-Account-Bytes-Used", strconv.FormatInt(bytes, 10))
	return swiftListing(c, rows), nil
}

// usage is the container's object count and bytes.
func (ct *swiftContainer) usage() (n, b int64) {
	for _, o := range ct.objects {
		n, b = n+1, b+int64(len(o.data))
	}
	return n, b
}

// swiftPutContainer creates a container (201) or updates the metadata of
// an existing one (202).
func (st *swiftStore) swiftPutContainer(c *call) (any, error) {
	a := st.account(c.t.project)
	name := c.r.PathValue("container")
	if len(name) > 256 || strings.Contains(name, "/") {
		return nil, errf(http.StatusBadRequest, "", "Container name length of %d longer than 256", len(name))
	}
	ct, ok := a[name]
	if !ok {
		ct = &swiftContainer{meta: map[string]string{}, objects: map[string]*swiftObject{}, created: time.Now()}
		a[name] = ct
	}
	setMeta(ct.meta, c.r.Header, swiftMetaContainer)
	if ok {
		return reply{status: http.StatusAccepted}, nil
	}
	return reply{status: http.StatusCreated}, nil
}

// swiftPostContainer updates a container's metadata (an empty value
// removes a key).
func (st *swiftStore) swiftPostContainer(c *call) (any, error) {
	ct, e := st.container(c)
	if e != nil {
		return nil, e
	}
	setMeta(ct.meta, c.r.Header, swiftMetaContainer)
	return noContent(), nil
}

// setMeta copies the request's prefix headers into meta; an empty value
// or an X-Remove-<prefix> header removes the key.
func setMeta(meta map[string]string, h http.Header, prefix string) {
	for k, vs := range h {
		if key, ok := strings.CutPrefix(k, "X-Remove-"); ok && strings.HasPrefix("X-"+key, prefix) {
			delete(meta, "X-"+key)
			continue
		}
		if !strings.HasPrefix(k, prefix) || len(vs) == 0 {
			continue
		}
		if vs[0] == "" {
			delete(meta, k)
			continue
		}
		meta[k] = vs[0]
	}
}

// swiftGetContainer serves HEAD and GET of a container: its metadata and
// counts and, for GET, its objects (prefix, marker, end_marker, limit).
func (st *swiftStore) swiftGetContainer(c *call) (any, error) {
	ct, e := st.container(c)
	if e != nil {
		return nil, e
	}
	n, b := ct.usage()
	h := c.w.Header()
	for k, v := range ct.meta {
		h.Set(k, v)
	}
	h.Set("X-Container-Object-Count", strconv.FormatInt(n, 10))
	h.Set("X-Container-Bytes-Used", strconv.FormatInt(b, 10))
	h.Set("X-Timestamp", swiftTimestamp(ct.created))
	var rows []map[string]any
	for _, name := range swiftPage(c.r.URL.Query(), ct.objects) {
		o := ct.objects[name]
		rows = append(rows, map[string]any{
			"name": name, "hash": o.etag, "bytes": len(o.data), "content_type": o.contentType,
			"last_modified": o.modified.UTC().Format(swiftTimeList),
		})
	}
	return swiftListing(c, rows), nil
}

// swiftPage is the page of m's names a listing's query asks for: those
// with its prefix, after its marker and before its end_marker, sorted,
// at most its limit (and the proxy's).
func swiftPage[T any](q url.Values, m map[string]T) []string {
	limit := swiftListLimit
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l > 0 && l < limit {
		limit = l
	}
	var page []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !strings.HasPrefix(name, q.Get("prefix")) || name <= q.Get("marker") || (q.Get("end_marker") != "" && name >= q.Get("end_marker")) {
			continue
		}
		if len(page) == limit {
			break
		}
		page = append(page, name)
	}
	return page
}

// swiftListing answers a listing: JSON with ?format=json or Accept:
// application/json (an empty list is 200 []), else one name a line (an
// empty list is 204). HEAD answers 204.
func swiftListing(c *call, rows []map[string]any) any {
	if c.r.Method == http.MethodHead {
		return noContent()
	}
	if c.r.URL.Query().Get("format") == "json" || strings.Contains(c.r.Header.Get("Accept"), "application/json") {
		if rows == nil {
			rows = []map[string]any{}
		}
		return rows
	}
	if len(rows) == 0 {
		return noContent()
	}
	c.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	c.w.WriteHeader(http.StatusOK)
	for _, r := range rows {
		_, _ = fmt.Fprintln(c.w, r["name"])
	}
	return written{}
}

// swiftDeleteContainer deletes an empty container (409 when it holds
// objects).
func (st *swiftStore) swiftDeleteContainer(c *call) (any, error) {
	ct, e := st.container(c)
	if e != nil {
		return nil, e
	}
	if len(ct.objects) > 0 {
		return nil, errf(http.StatusConflict, "", "There was a conflict when trying to complete your request.")
	}
	delete(st.account(c.t.project), c.r.PathValue("container"))
	return noContent(), nil
}

// swiftPutObject stores an object: 201 with its ETag (the MD5 of what
// was received); 422 when the request's ETag is another; 412 when
// If-None-Match: * and the object exists.
func (s *Cloud) swiftPutObject(c *call) (any, error) {
	st := s.swiftStore
	name := c.r.PathValue("object")
	st.mu.Lock()
	_, e := st.container(c)
	st.mu.Unlock()
	if e != nil {
		return nil, e
	}
	m := md5.New() //nolint:gosec // Swift's ETag
	data, err := io.ReadAll(io.TeeReader(c.r.Body, m))
	if err != nil {
		return nil, errf(http.StatusRequestTimeout, "", "Your request timed out: %v", err)
	}
	etag := hex.EncodeToString(m.Sum(nil))
	if want := strings.Trim(c.r.Header.Get("ETag"), `"`); want != "" && !strings.EqualFold(want, etag) {
		return nil, errf(http.StatusUnprocessableEntity, "", "Unable to process the contained instructions")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	ct, e := st.container(c) // it may be gone meanwhile
	if e != nil {
		return nil, e
	}
	if _, exists := ct.objects[name]; exists && c.r.Header.Get("If-None-Match") == "*" {
		return nil, errf(http.StatusPreconditionFailed, "", "A precondition for this request was not met.")
	}
	o := &swiftObject{data: data, etag: etag, contentType: c.r.Header.Get("Content-Type"), meta: map[string]string{}, modified: time.Now()}
	if o.contentType == "" {
		o.contentType = "application/octet-stream"
	}
	setMeta(o.meta, c.r.Header, swiftMetaObject)
	ct.objects[name] = o
	c.w.Header().Set("ETag", etag)
	c.w.Header().Set("Last-Modified", o.modified.UTC().Format(http.TimeFormat))
	return reply{status: http.StatusCreated}, nil
}

// swiftGetObject serves HEAD and GET of an object.
func (s *Cloud) swiftGetObject(c *call) (any, error) {
	st := s.swiftStore
	st.mu.Lock()
	ct, e := st.container(c)
	var o *swiftObject
	if e == nil {
		o = ct.objects[c.r.PathValue("object")]
	}
	st.mu.Unlock()
	if e != nil {
		return nil, e
	}
	if o == nil {
		return nil, errf(http.StatusNotFound, "", "The resource could not be found.")
	}
	h := c.w.Header()
	for k, v := range o.meta {
		h.Set(k, v)
	}
	h.Set("Content-Type", o.contentType)
	h.Set("Content-Length", strconv.Itoa(len(o.data)))
	h.Set("ETag", o.etag)
	h.Set("Last-Modified", o.modified.UTC().Format(http.TimeFormat))
	h.Set("X-Timestamp", swiftTimestamp(o.modified))
	h.Set("Accept-Ranges", "bytes")
	c.w.WriteHeader(http.StatusOK)
	if c.r.Method != http.MethodHead {
		_, _ = c.w.Write(o.data) // the data is never changed in place: a PUT replaces the object
	}
	return written{}, nil
}

// swiftDeleteObject deletes an object (404 when there is none).
func (st *swiftStore) swiftDeleteObject(c *call) (any, error) {
	ct, e := st.container(c)
	if e != nil {
		return nil, e
	}
	name := c.r.PathValue("object")
	if _, ok := ct.objects[name]; !ok {
		return nil, errf(http.StatusNotFound, "", "The resource could not be found.")
	}
	delete(ct.objects, name)
	return noContent(), nil
}

// swiftTimestamp is Swift's X-Timestamp: seconds with five decimals.
func swiftTimestamp(t time.Time) string {
	return fmt.Sprintf("%.5f", float64(t.UnixMicro())/1e6)
}
