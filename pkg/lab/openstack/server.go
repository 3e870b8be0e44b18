package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// Service names the lab records calls under (and fault knobs match on).
const (
	Keystone = "keystone"
	Nova     = "nova"
	Neutron  = "neutron"
	Glance   = "glance"
	Cinder   = "cinder"
	Swift    = "swift"
)

// Path prefixes of the services on the lab's listener.
const (
	IdentityPrefix = "/identity"
	ComputePrefix  = "/compute"
	NetworkPrefix  = "/network"
	ImagePrefix    = "/image"
	VolumePrefix   = "/volume"
	ObjectPrefix   = "/object"
)

// DefaultPassword is the password of the default users (the real lab's).
const DefaultPassword = "labpass"

// User is a Keystone user of the lab, in the Default domain, with Roles on
// Project (by name).
type User struct {
	Name     string
	Password string
	Project  string
	Roles    []string
}

// Quota limits one project; a negative or zero value is unlimited.
type Quota struct {
	Instances, Cores, RAM                          int
	Networks, Subnets, Ports, Routers, FloatingIPs int
	SecurityGroups, SecurityGroupRules             int
	Volumes, Gigabytes                             int
}

// Config configures the lab's OpenStack. The zero value is the real lab:
// users admin and demo (password DefaultPassword), projects admin, demo and
// service, region RegionOne, zone "nova", the real lab's flavors, and an
// external network "public" (127.202.0.0/24, pool .10–.250).
type Config struct {
	// Addr is the loopback listen address; "" means 127.0.0.1:0.
	Addr string
	// Region is the catalog's region (default RegionOne).
	Region string
	// Users replace the default admin and demo users.
	Users []User
	// Flavors replace the default flavors.
	Flavors []Flavor
	// Zones are the availability zones (default ["nova"]).
	Zones []string
	// ExternalCIDR is the external network's subnet (default
	// 127.202.0.0/24, beside the real openstack-lab's 127.203.0.0/24 so a
	// run following that cloud never collides with a simulated one); it
	// must be a loopback CIDR.
	ExternalCIDR string
	// BootDelay is how long a server stays in BUILD (default 20ms); its
	// ports are bound halfway.
	BootDelay time.Duration
	// DeleteDelay is how long a server delete takes (default 20ms): half
	// with task "deleting", half with status DELETED, then 404.
	DeleteDelay time.Duration
	// VolumeDelay is how long volumes stay creating/deleting (default 5ms).
	VolumeDelay time.Duration
	// ImportDelay is how long an image import stays "importing" (default 5ms).
	ImportDelay time.Duration
	// TokenTTL is the lifetime of tokens (default 4h, the real lab's).
	TokenTTL time.Duration
	// Quota is every project's quota (default unlimited, as the real lab).
	Quota Quota
	// NeutronTagsInPOST accepts "tags" in Neutron POST bodies (the
	// tag-creation extension of 2024.x); Zed refuses them with 400.
	NeutronTagsInPOST bool
	// FailBoot makes a server go to ERROR instead of ACTIVE.
	FailBoot func(name string) bool
	// OnEvent is called (outside any lock) when a server becomes ACTIVE,
	// goes to ERROR or is gone, and when a floating IP is (dis)associated.
	OnEvent func(Event)
	// OnUnhandled is called for requests no route serves.
	OnUnhandled func(service, method, path string)
	// Injector and Recorder are the lab's; nil means none / a private one.
	Injector *labnet.Injector
	Recorder *labnet.Recorder
}

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.Region == "" {
		c.Region = "RegionOne"
	}
	if len(c.Users) == 0 {
		c.Users = []User{
			{Name: "admin", Password: DefaultPassword, Project: "admin", Roles: []string{"admin", "member", "reader"}},
			{Name: "demo", Password: DefaultPassword, Project: "demo", Roles: []string{"member", "reader"}},
		}
	}
	if len(c.Flavors) == 0 {
		c.Flavors = DefaultFlavors()
	}
	if len(c.Zones) == 0 {
		c.Zones = []string{"nova"}
	}
	if c.ExternalCIDR == "" {
		c.ExternalCIDR = "127.202.0.0/24"
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&c.BootDelay, 20 * time.Millisecond}, {&c.DeleteDelay, 20 * time.Millisecond}, {&c.VolumeDelay, 5 * time.Millisecond}, {&c.ImportDelay, 5 * time.Millisecond}, {&c.TokenTTL, 4 * time.Hour}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if c.Recorder == nil {
		c.Recorder = &labnet.Recorder{}
	}
}

// Cloud is a running lab OpenStack.
type Cloud struct {
	// URL is the base URL ("http://127.0.0.1:port").
	URL string

	cfg  Config
	srv  *http.Server
	st   *state
	once sync.Once
	// swiftStore is Swift's accounts (swift.go).
	swiftStore *swiftStore
}

// Start listens on loopback and serves until ctx ends or Close is called.
func Start(ctx context.Context, cfg Config) (*Cloud, error) {
	cfg.setDefaults()
	l, err := labnet.Listen(ctx, cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("lab openstack: %w", err)
	}
	s := &Cloud{URL: "http://" + l.Addr().String(), cfg: cfg, swiftStore: &swiftStore{accounts: map[string]map[string]*swiftContainer{}}}
	s.st, err = newState(ctx, &s.cfg, s.URL)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("lab openstack: %w", err), l.Close())
	}
	mux := http.NewServeMux()
	for _, svc := range []struct {
		name, prefix string
		h            http.Handler
	}{
		{Keystone, IdentityPrefix, s.keystoneMux()},
		{Nova, ComputePrefix, s.novaMux()},
		{Neutron, NetworkPrefix, s.neutronMux()},
		{Glance, ImagePrefix, s.glanceMux()},
		{Cinder, VolumePrefix, s.cinderMux()},
		{Swift, ObjectPrefix, s.swiftMux()},
	} {
		h := labnet.Middleware(svc.name, cfg.Injector, cfg.Recorder, s.common(svc.name, svc.h))
		mux.Handle(svc.prefix+"/", http.StripPrefix(svc.prefix, h))
		mux.Handle(svc.prefix, http.StripPrefix(svc.prefix, h))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.unhandled("", w, r) })
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: labnet.ReadHeaderTimeout}
	go func() { _ = s.srv.Serve(l) }()
	context.AfterFunc(ctx, func() { _ = s.Close() })
	return s, nil
}

// Close stops the server and every pending state change.
func (s *Cloud) Close() error {
	var err error
	s.once.Do(func() {
		s.st.close()
		err = s.srv.Close()
	})
	return err
}

// AuthURL is the Keystone v3 endpoint (OS_AUTH_URL).
func (s *Cloud) AuthURL() string { return s.URL + IdentityPrefix + "/v3" }

// Region is the catalog's region.
func (s *Cloud) Region() string { return s.cfg.Region }

// Recorder returns the recorder of this server's calls.
func (s *Cloud) Recorder() *labnet.Recorder { return s.cfg.Recorder }

// common adds what every OpenStack service does: request ids, and "/" for
// the bare service prefix.
func (s *Cloud) common(service string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := "req-" + newUUID()
		w.Header().Set("X-Openstack-Request-Id", id)
		if service == Nova {
			w.Header().Set("X-Compute-Request-Id", id)
		}
		if r.URL.Path == "" {
			r.URL.Path = "/"
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Cloud) unhandled(service string, w http.ResponseWriter, r *http.Request) {
	if s.cfg.OnUnhandled != nil {
		s.cfg.OnUnhandled(service, r.Method, r.URL.Path)
	}
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = fmt.Fprint(w, "404 Not Found\n\nThe resource could not be found.\n\n   ")
}

// authed wraps h in Keystone token validation (401 without a valid token).
func (s *Cloud) authed(h func(http.ResponseWriter, *http.Request, *token)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := s.st.validToken(r.Header.Get("X-Auth-Token"))
		if tok == nil {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Keystone uri=%q", s.URL+IdentityPrefix))
			keystoneError(w, keystoneErr(http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication."))
			return
		}
		h(w, r, tok)
	}
}

// catchAll answers 404 for paths a service does not serve.
func (s *Cloud) catchAll(service string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.unhandled(service, w, r) }
}

// getBoth serves GET "/x" and "/x/" with h.
func getBoth(mux *http.ServeMux, path string, h http.Handler) {
	mux.Handle("GET "+path, h)
	mux.Handle("GET "+strings.TrimSuffix(path, "/")+"/", h)
}
