package rancher

import (
	"context"
	"crypto/tls"
	stdx509 "crypto/x509"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/siderolabs/crypto/x509"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// Service is the name the lab records this service's calls under.
const Service = "rancher"

// Auth providers the lab's principals search can answer as (Options.Provider).
const (
	// ProviderLocal is Rancher's local users: ids local://u-xxxxx, search
	// by Rancher's prefix index (≤ 6 characters) or substring.
	ProviderLocal = "local"
	// ProviderOpenLDAP is an OpenLDAP directory: ids
	// openldap_user://uid=<login>,ou=users,dc=lab, prefix search.
	ProviderOpenLDAP = "openldap"
	// ProviderShibboleth is Shibboleth (SAML) with an OpenLDAP search
	// backend: ids shibboleth_user://<login>, prefix search.
	ProviderShibboleth = "shibboleth"
)

// User is a user the principals search can find, as the selected auth
// provider knows it.
type User struct {
	// Username is the login name ("alice").
	Username string
	// DisplayName is the principal's name; "" means Username.
	DisplayName string
	// PrincipalID is the principal id; "" means the provider's shape for
	// Username (see the Provider constants).
	PrincipalID string
	// GlobalOwner gives the user a GlobalRole whose inheritedClusterRoles
	// hold cluster-owner: Rancher then keeps a crtb-grb-* binding for it in
	// every cluster, and recreates it when deleted.
	GlobalOwner bool
}

// Group is a group principal the search can find.
type Group struct {
	// Name is the group's name.
	Name string
	// PrincipalID is its id, e.g. "openldap_group://cn=ops,dc=lab".
	PrincipalID string
}

// Options configure a Server.
type Options struct {
	// Addr is the loopback listen address; "" means 127.0.0.1:0.
	Addr string
	// Token is the accepted bearer token; "" means a generated
	// "token-xxxxx:<52 chars>".
	Token string
	// Provider is the auth provider the token's user logged in with, the
	// one that answers the principals search: ProviderLocal ("" too),
	// ProviderOpenLDAP or ProviderShibboleth.
	Provider string
	// Users and Groups are the principals the search knows.
	Users  []User
	Groups []Group
	// ConditionDelay is how long after import BackingNamespaceCreated
	// (and the other initial conditions) stay "Unknown".
	ConditionDelay time.Duration
	// CommandDelay is how long after a registration token's creation its
	// command and manifestUrl stay "" (a controller fills them).
	CommandDelay time.Duration
	// RemoveDelay is how long a deleted cluster stays listed as
	// "removing" before its finalizers let it go.
	RemoveDelay time.Duration
	// Seed makes generated ids replayable.
	Seed uint64
	// Injector and Recorder are the lab's; nil means none / a private one.
	Injector *labnet.Injector
	Recorder *labnet.Recorder
}

// Server is a running lab Rancher.
type Server struct {
	// URL is the base URL ("https://127.0.0.1:port").
	URL string
	// CAPEM is the PEM CA certificate the server's certificate chains to.
	CAPEM []byte
	// Token is the bearer token the server accepts.
	Token string
	// AdminPrincipalID is the principal of the token's user, the owner of
	// every cluster it creates (a local user: local://user-xxxxx).
	AdminPrincipalID string

	opts Options
	srv  *http.Server

	mu       sync.Mutex
	rng      *rand.Rand
	users    []User
	clusters map[string]*cluster
	tokens   []*regToken
	bindings []*binding
	scripted []scriptedError
	// userIDs are the Rancher users (u-xxxxx) made for principals, by id.
	userIDs map[string]string
}

type scriptedError struct {
	method, path string
	status       int
	body         any
}

// Start listens and serves until ctx ends or Close is called.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Recorder == nil {
		o.Recorder = &labnet.Recorder{}
	}
	if o.Provider == "" {
		o.Provider = ProviderLocal
	}
	if !slices.Contains([]string{ProviderLocal, ProviderOpenLDAP, ProviderShibboleth}, o.Provider) {
		return nil, fmt.Errorf("rancher: auth provider %q: choose %s, %s or %s", o.Provider, ProviderLocal, ProviderOpenLDAP, ProviderShibboleth)
	}
	s := &Server{
		opts: o, clusters: map[string]*cluster{}, userIDs: map[string]string{},
		rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x5a17)), //nolint:gosec // replayable ids, not security
	}
	s.Token = o.Token
	if s.Token == "" {
		s.Token = "token-" + s.randID(5) + ":" + s.randID(52)
	}
	s.AdminPrincipalID = "local://user-" + s.randID(5)
	for _, u := range o.Users {
		if u.DisplayName == "" {
			u.DisplayName = u.Username
		}
		if u.PrincipalID == "" {
			u.PrincipalID = s.principalFor(u.Username)
		}
		s.users = append(s.users, u)
	}
	s.clusters[localCluster] = &cluster{id: localCluster, name: localCluster, created: time.Now(), connected: true}
	l, err := labnet.Listen(ctx, o.Addr)
	if err != nil {
		return nil, fmt.Errorf("rancher: %w", err)
	}
	host, _, _ := net.SplitHostPort(l.Addr().String())
	cfg, caPEM, err := serverTLS(host)
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	s.URL, s.CAPEM = "https://"+l.Addr().String(), caPEM
	s.srv = &http.Server{
		Handler:           labnet.Middleware(Service, o.Injector, o.Recorder, s.routes()),
		ReadHeaderTimeout: labnet.ReadHeaderTimeout, TLSConfig: cfg,
	}
	go func() { _ = s.srv.Serve(tls.NewListener(l, cfg)) }()
	context.AfterFunc(ctx, func() { _ = s.Close() })
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Recorder returns the recorder of this server's calls.
func (s *Server) Recorder() *labnet.Recorder { return s.opts.Recorder }

// Client returns an HTTP client that trusts CAPEM and dials loopback only.
func (s *Server) Client() *http.Client {
	pool := stdx509.NewCertPool()
	pool.AppendCertsFromPEM(s.CAPEM)
	return &http.Client{Transport: &http.Transport{
		DialContext:     labnet.Dialer().DialContext,
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
}

// ScriptError makes the next request with this method and exact path
// answer status with body (JSON-encoded) instead, e.g. to exercise
// list-shaped "message" or "errors[]" bodies (RA-11).
func (s *Server) ScriptError(method, path string, status int, body any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripted = append(s.scripted, scriptedError{method: method, path: path, status: status, body: body})
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v3/clusters", s.handle(s.listClusters))
	mux.HandleFunc("POST /v3/clusters", s.handle(s.createCluster))
	mux.HandleFunc("GET /v3/clusters/{id}", s.handle(s.getCluster))
	mux.HandleFunc("DELETE /v3/clusters/{id}", s.handle(s.deleteCluster))
	mux.HandleFunc("GET /v3/clusters/{id}/clusterregistrationtokens", s.handle(s.listTokens))
	mux.HandleFunc("GET /v3/clusters/{id}/clusterRegistrationTokens", s.handle(s.listTokens))
	mux.HandleFunc("POST /v3/clusterRegistrationTokens", s.handle(s.createToken))
	mux.HandleFunc("GET /v3/clusterRegistrationTokens", s.handle(s.listTokens))
	mux.HandleFunc("POST /v3/principals", s.handle(s.principalsAction))
	mux.HandleFunc("GET /v3/clusterroletemplatebindings", s.handle(s.listBindings))
	mux.HandleFunc("POST /v3/clusterroletemplatebindings", s.handle(s.createBinding))
	mux.HandleFunc("GET /v3/clusterroletemplatebindings/{id}", s.handle(s.getBinding))
	mux.HandleFunc("DELETE /v3/clusterroletemplatebindings/{id}", s.handle(s.deleteBinding))
	mux.HandleFunc("/", s.handle(func(*call) (any, error) {
		return nil, norman(http.StatusNotFound, "NotFound", "not found")
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && isImportPath(r.URL.Path) {
			s.handle(s.importManifest)(w, r) // unauthenticated, like Rancher's
			return
		}
		s.mu.Lock()
		s.settle(time.Now())
		s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+s.Token {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"type": "error", "status": "401", "message": "Unauthorized 401: must authenticate"})
			return
		}
		if e, ok := s.takeScripted(r.Method, r.URL.Path); ok {
			writeJSON(w, e.status, e.body)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (s *Server) takeScripted(method, path string) (scriptedError, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.scripted {
		if e.method == method && e.path == path {
			s.scripted = append(s.scripted[:i], s.scripted[i+1:]...)
			return e, true
		}
	}
	return scriptedError{}, false
}

// randID returns n lowercase alphanumerics; callers hold s.mu or own s.
func (s *Server) randID(n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[s.rng.IntN(len(alphabet))]
	}
	return string(b)
}

func serverTLS(host string) (*tls.Config, []byte, error) {
	ca, err := x509.NewSelfSignedCertificateAuthority(x509.Organization("lab-rancher"), x509.ECDSA(true))
	if err != nil {
		return nil, nil, fmt.Errorf("rancher: CA: %w", err)
	}
	caObj, err := x509.NewCertificateAuthorityFromCertificateAndKey(&x509.PEMEncodedCertificateAndKey{Crt: ca.CrtPEM, Key: ca.KeyPEM})
	if err != nil {
		return nil, nil, fmt.Errorf("rancher: CA: %w", err)
	}
	kp, err := x509.NewKeyPair(caObj, x509.CommonName("rancher"), x509.IPAddresses([]net.IP{net.ParseIP(host)}),
		x509.DNSNames([]string{"localhost"}), x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}),
		x509.NotBefore(time.Now().Add(-time.Minute)), x509.NotAfter(time.Now().Add(365*24*time.Hour)))
	if err != nil {
		return nil, nil, fmt.Errorf("rancher: serving certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(kp.CrtPEM, kp.KeyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("rancher: serving certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, ca.CrtPEM, nil
}

// collection wraps data in a norman collection.
func (s *Server) collection(resourceType, self string, data []map[string]any) map[string]any {
	if data == nil {
		data = []map[string]any{}
	}
	return map[string]any{
		"type": "collection", "resourceType": resourceType, "links": map[string]any{"self": s.URL + self},
		"actions": map[string]any{}, "createTypes": map[string]any{resourceType: s.URL + self},
		"pagination": map[string]any{"limit": 1000, "total": len(data)}, "sort": map[string]any{}, "filters": map[string]any{},
		"data": data,
	}
}
