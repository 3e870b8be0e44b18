package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// lateHoldMax bounds how long the proxy holds a request whose client does
// not give up (talosc's scaled request timeout is 10 s).
const lateHoldMax = 5 * time.Minute

// lateSendTimeout bounds a late create's send: a busy loopback cloud
// takes far longer than its usual second.
const lateSendTimeout = 3 * time.Minute

// lateRule picks the requests a lateProxy applies late: Method (any when
// empty) and a path prefix, as "lab kill-at call" takes them.
type lateRule struct{ method, prefix string }

// parseLateRule reads "METHOD /path" or "/path".
func parseLateRule(s string) lateRule {
	if m, p, ok := strings.Cut(s, " "); ok {
		return lateRule{method: m, prefix: p}
	}
	return lateRule{prefix: s}
}

// lateProxy is a reverse proxy on loopback in front of every endpoint of a
// real OpenStack: the cloud of a busy machine, whose creates are applied
// after the client gave up. A request a rule picks is held, the first
// time for each resource name, until its client's deadline cut it off,
// and only then sent on to the service (its answer going nowhere); every
// other request passes through. Keystone's catalog, version documents and
// links name the proxy's fronts instead of the services, so clients come
// back through it.
type lateProxy struct {
	rules []lateRule
	logf  func(string, ...any)

	mu       sync.Mutex
	fronts   map[string]string   // service origin -> its front's origin
	backs    map[string]bool     // the fronts' origins
	held     map[string]bool     // rule, method, path and name of each held create
	applied  []string            // the late creates sent on, and their answers
	made     map[string][]string // ids of what the late creates made, by path
	servers  []*http.Server
	inflight sync.WaitGroup // held creates and their late sends
}

// origins finds loopback service origins in answers.
var origins = regexp.MustCompile(`https?://(?:127\.\d+\.\d+\.\d+|localhost):\d+`)

// bodyName finds a create's resource name in its JSON body.
var bodyName = regexp.MustCompile(`"name"\s*:\s*"([^"]*)"`)

// newLateProxy fronts the identity service at authURL; the other services
// get their fronts as the catalog names them.
func newLateProxy(authURL string, rules []lateRule, logf func(string, ...any)) (*lateProxy, string, error) {
	p := &lateProxy{rules: rules, logf: logf, fronts: map[string]string{}, backs: map[string]bool{}, held: map[string]bool{}, made: map[string][]string{}}
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, "", err
	}
	front, err := p.front(u.Scheme + "://" + u.Host)
	if err != nil {
		return nil, "", err
	}
	u2, _ := url.Parse(front)
	u.Scheme, u.Host = u2.Scheme, u2.Host
	return p, u.String(), nil
}

// front returns the origin of the front of a service origin, starting one
// on a free loopback port the first time.
func (p *lateProxy) front(origin string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f, ok := p.fronts[origin]; ok {
		return f, nil
	}
	target, err := url.Parse(origin)
	if err != nil {
		return "", err
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	f := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: p.handler(target), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	p.fronts[origin], p.backs[f] = f, true
	p.servers = append(p.servers, srv)
	return f, nil
}

// transport sends on to the services, on loopback only.
func lateTransport() *http.Transport {
	return &http.Transport{DialContext: labnet.Dialer().DialContext, Proxy: nil}
}

// handler serves the front of the service at target.
func (p *lateProxy) handler(target *url.URL) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Del("Accept-Encoding") // answers are rewritten as text
		},
		Transport:      lateTransport(),
		ModifyResponse: p.rewrite,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key, body, ok := p.holds(r); ok {
			p.late(target, r, key, body)
			return
		}
		rp.ServeHTTP(w, r)
	})
}

// holds reports whether r is a create to hold: a rule picks it and no
// create of its rule and name was held before. It reads r's body.
func (p *lateProxy) holds(r *http.Request) (string, []byte, bool) {
	rule := -1
	for i, ru := range p.rules {
		if (ru.method == "" || ru.method == r.Method) && strings.HasPrefix(r.URL.Path, ru.prefix) {
			rule = i
			break
		}
	}
	if rule < 0 {
		return "", nil, false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return "", nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	name := ""
	if m := bodyName.FindSubmatch(body); m != nil {
		name = string(m[1])
	}
	key := strconv.Itoa(rule) + " " + r.Method + " " + r.URL.Path + " " + name
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[key] {
		return "", nil, false
	}
	p.held[key] = true
	return key, body, true
}

// late waits until r's client gives up, then sends r on to the service
// and logs its answer, which nobody reads.
func (p *lateProxy) late(target *url.URL, r *http.Request, key string, body []byte) {
	p.inflight.Add(1) // held, then sent on
	select {
	case <-r.Context().Done():
	case <-time.After(lateHoldMax):
		p.logf("late proxy: %s: the client never gave up; sending it on", key)
	}
	out := r.Clone(context.Background())
	out.RequestURI, out.Host = "", target.Host
	out.URL.Scheme, out.URL.Host = target.Scheme, target.Host
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	out.Header.Del("Accept-Encoding")
	go func() {
		defer p.inflight.Done()
		ctx, cancel := context.WithTimeout(context.Background(), lateSendTimeout)
		defer cancel()
		res, err := (&http.Client{Transport: lateTransport()}).Do(out.WithContext(ctx))
		what := "error " + fmt.Sprint(err)
		var made string
		if err == nil {
			made = madeID(res.Body)
			_ = res.Body.Close()
			what = res.Status
		}
		p.mu.Lock()
		p.applied = append(p.applied, key+": "+what)
		if made != "" {
			p.made[r.URL.Path] = append(p.made[r.URL.Path], made)
		}
		p.mu.Unlock()
		p.logf("late proxy: applied %s after its client gave up: %s", key, what)
	}()
}

// rewrite makes an answer name the fronts instead of the services: its
// body (catalogs, version documents, links) and its Location.
func (p *lateProxy) rewrite(res *http.Response) error {
	if loc := res.Header.Get("Location"); loc != "" {
		res.Header.Set("Location", p.replace(loc))
	}
	ct := res.Header.Get("Content-Type")
	if !strings.Contains(ct, "json") || res.Header.Get("Content-Encoding") != "" {
		return nil
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return err
	}
	out := []byte(p.replace(string(body)))
	res.Body = io.NopCloser(bytes.NewReader(out))
	res.ContentLength = int64(len(out))
	res.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

// replace puts the front of every service origin s names in its place
// (fronts are started as needed).
func (p *lateProxy) replace(s string) string {
	var errs []error
	out := origins.ReplaceAllStringFunc(s, func(o string) string {
		p.mu.Lock()
		front := p.backs[o]
		p.mu.Unlock()
		if front {
			return o
		}
		f, err := p.front(o)
		if err != nil {
			errs = append(errs, err)
			return o
		}
		return f
	})
	if err := errors.Join(errs...); err != nil {
		p.logf("late proxy: %v", err)
	}
	return out
}

// madeID is the id of the resource a create's answer describes
// ({"server": {"id": ...}}), or "".
func madeID(body io.Reader) string {
	var doc map[string]struct {
		ID string `json:"id"`
	}
	if json.NewDecoder(body).Decode(&doc) != nil || len(doc) != 1 {
		return ""
	}
	for _, v := range doc {
		return v.ID
	}
	return ""
}

// madeLate returns the ids of what the late creates made, by the path
// they were sent to ("/v2.0/ports").
func (p *lateProxy) madeLate() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.made)
}

// appliedLate is what the proxy applied after its client gave up.
func (p *lateProxy) appliedLate() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.applied...)
}

// Close waits for the late creates in flight and stops every front.
func (p *lateProxy) Close() {
	p.inflight.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.servers {
		_ = s.Close()
	}
}

// lateApplied checks "lab late-applied MIN": the late proxy of "lab follow
// DIR [NAME] late RULE..." applied at least MIN creates after their
// client gave up (it lists them).
func (s *scriptLab) lateApplied(ts *testscript.TestScript, args []string) {
	n := count(ts, append([]string{"late-applied"}, args...))
	if s.late == nil {
		ts.Fatalf("lab late-applied: no late proxy (lab follow DIR [NAME] late RULE... first)")
	}
	s.late.inflight.Wait()
	got := s.late.appliedLate()
	ts.Logf("applied late:\n  %s", strings.Join(got, "\n  "))
	if len(got) < n {
		ts.Fatalf("%d creates applied late, want at least %d", len(got), n)
	}
}

// uniqueLines checks "lab unique-lines N [NAME]": the last command's stdout
// has N non-empty lines, none twice (a cloud CLI's list of names: one
// resource per name). With NAME only the lines NAME or NAME-* count, so
// the list can be of every resource, tagged or not: a late duplicate that
// never got its tags is counted too.
func uniqueLines(ts *testscript.TestScript, args []string) {
	var name string
	if len(args) == 2 {
		name, args = args[1], args[:1]
	}
	n := count(ts, append([]string{"unique-lines"}, args...))
	seen := map[string]int{}
	var lines []string
	for l := range strings.Lines(ts.ReadFile("stdout")) {
		if l = strings.TrimSpace(l); l != "" && (name == "" || l == name || strings.HasPrefix(l, name+"-")) {
			seen[l]++
			lines = append(lines, l)
		}
	}
	var twice []string
	for l, c := range seen {
		if c > 1 {
			twice = append(twice, fmt.Sprintf("%s (%d times)", l, c))
		}
	}
	if len(twice) > 0 || len(lines) != n {
		ts.Fatalf("%d lines, want %d, each once; more than once: %v\n%s", len(lines), n, twice, strings.Join(lines, "\n"))
	}
}
