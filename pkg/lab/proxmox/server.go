package proxmox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// Service is the name the lab records this service's calls under.
const Service = "proxmox"

// Defaults of a lab Proxmox VE.
const (
	// DefaultTokenID is the API token every lab Proxmox accepts unless
	// Options.Tokens says otherwise; it has every privilege on "/".
	DefaultTokenID = "root@pam!talosc-lab"
	// DefaultTokenSecret is DefaultTokenID's secret.
	DefaultTokenSecret = "5e1f0c2a-7b3d-4c9e-8f60-1a2b3c4d5e6f"
	// DefaultVersion is the pve-manager version /version reports.
	DefaultVersion = "9.1.1"
	// DefaultTaskDuration is how long a task runs unless configured.
	DefaultTaskDuration = 20 * time.Millisecond
)

// Options configure a lab Proxmox VE cluster.
type Options struct {
	// Addr is the loopback listen address; "" means 127.0.0.1:0.
	Addr string
	// Nodes are the cluster nodes (default: one online node "pve1").
	Nodes []Node
	// Storages are the storage definitions (default: "local", a dir
	// storage for backup,iso,vztmpl, and "local-lvm", an lvmthin storage for
	// images,rootdir, both on every node, as a fresh PVE install has).
	Storages []Storage
	// Bridges are the Linux bridges every node has (default vmbr0).
	Bridges []string
	// BridgeMTU is the MTU a bridge reports in a node's network listing
	// (any node's bridge of that name); a bridge not in it reports none,
	// as PVE does for the default 1500.
	BridgeMTU map[string]int
	// Tokens are the API tokens (default: DefaultTokenID with every
	// privilege on "/").
	Tokens []Token
	// Version is the pve-manager version (default DefaultVersion).
	Version string
	// TaskDuration is how long tasks run (default DefaultTaskDuration);
	// TaskDurations overrides it per task type ("qmstart", "download",
	// ...); a zero duration there finishes such tasks before the API call
	// returns (download tasks still fetch first).
	TaskDuration  time.Duration
	TaskDurations map[string]time.Duration
	// DatacenterFirewall is the datacenter firewall's enable switch (off by
	// default, as on a fresh PVE install).
	DatacenterFirewall bool
	// Seed makes generated MAC addresses replayable.
	Seed uint64
	// DownloadRootCAs are trusted by download-url (nil: the system pool).
	DownloadRootCAs *x509.CertPool
	// Injector and Recorder are the lab's; nil means none / a private one.
	Injector *labnet.Injector
	Recorder *labnet.Recorder
}

// Server is a running lab Proxmox VE cluster.
type Server struct {
	// URL is the origin ("https://127.0.0.1:port"); the API is under
	// URL + "/api2/json" (APIURL).
	URL    string
	APIURL string
	// CAPEM is the PEM of the self-signed CA the server certificate chains
	// to (what a user passes as proxmox.tls_verify).
	CAPEM []byte

	opts        Options
	srv         *http.Server
	caPool      *x509.CertPool
	fingerprint string
	router      router
	events      *eventQueue

	mu           sync.Mutex
	closed       bool
	unhandled    func(method, path string)
	nodes        map[string]*node
	nodeOrder    []string
	storages     map[string]*storage
	storageOrder []string
	volumes      map[volKey]*volume
	vms          map[int]*vm
	pools        map[string]*pool
	tasks        map[string]*task
	taskList     []*task
	taskFaults   []*TaskFault
	timers       map[*time.Timer]struct{}
	tokens       map[string]*token
	fwCluster    map[string]string
	sdn          sdnState
	pidSeq       int
	rng          *rand.Rand
}

// Start listens on loopback and serves until ctx ends or Close is called.
func Start(ctx context.Context, o Options) (*Server, error) {
	o = withDefaults(o)
	l, err := labnet.Listen(ctx, o.Addr)
	if err != nil {
		return nil, fmt.Errorf("proxmox: %w", err)
	}
	host, _, _ := net.SplitHostPort(l.Addr().String())
	ca, err := newCertificates(host)
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("proxmox: %w", err)
	}
	s := &Server{
		URL:         "https://" + l.Addr().String(),
		CAPEM:       ca.caPEM,
		opts:        o,
		caPool:      ca.pool,
		fingerprint: ca.fingerprint,
		events:      newEventQueue(),
		volumes:     map[volKey]*volume{},
		vms:         map[int]*vm{},
		pools:       map[string]*pool{},
		tasks:       map[string]*task{},
		timers:      map[*time.Timer]struct{}{},
		fwCluster:   map[string]string{},
		sdn:         newSDNState(),
		pidSeq:      0x1a2b00,
		rng:         rand.New(rand.NewPCG(o.Seed, o.Seed^0x5bd1e995)), //nolint:gosec // replayable MACs, not security
	}
	s.APIURL = s.URL + apiPrefix
	if err := s.configure(o); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("proxmox: %w", err)
	}
	s.routes()
	s.srv = &http.Server{
		Handler:           labnet.Middleware(Service, o.Injector, o.Recorder, s),
		ReadHeaderTimeout: labnet.ReadHeaderTimeout,
		// pveproxy speaks HTTP/1.1 only.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	tl := tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{ca.leaf}, MinVersion: tls.VersionTLS12})
	go func() { _ = s.srv.Serve(tl) }()
	context.AfterFunc(ctx, func() { _ = s.Close() })
	return s, nil
}

func withDefaults(o Options) Options {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if len(o.Nodes) == 0 {
		o.Nodes = []Node{{Name: "pve1"}}
	}
	if len(o.Storages) == 0 {
		o.Storages = []Storage{
			{ID: "local", Type: "dir", Content: []string{"backup", "iso", "vztmpl"}},
			{ID: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}},
		}
	}
	if len(o.Bridges) == 0 {
		o.Bridges = []string{"vmbr0"}
	}
	if len(o.Tokens) == 0 {
		o.Tokens = []Token{{ID: DefaultTokenID, Secret: DefaultTokenSecret, ACL: []ACL{{Path: "/", Privs: AllPrivileges()}}}}
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	o.TaskDurations = maps.Clone(o.TaskDurations)
	if o.TaskDuration <= 0 {
		o.TaskDuration = DefaultTaskDuration
	}
	if o.Recorder == nil {
		o.Recorder = &labnet.Recorder{}
	}
	return o
}

// configure builds the initial state from the options.
func (s *Server) configure(o Options) error {
	if err := s.setNodes(o.Nodes); err != nil {
		return err
	}
	if err := s.setStorages(o.Storages); err != nil {
		return err
	}
	for _, t := range o.Tokens {
		if err := s.AddToken(t); err != nil {
			return err
		}
	}
	if o.DatacenterFirewall {
		s.fwCluster["enable"] = "1"
	}
	return nil
}

// Close stops the server and every pending task timer.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for t := range s.timers {
		t.Stop()
	}
	s.timers = nil
	s.mu.Unlock()
	s.events.close()
	if err := s.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("proxmox: close: %w", err)
	}
	return nil
}

// Recorder returns the recorder of this server's calls.
func (s *Server) Recorder() *labnet.Recorder { return s.opts.Recorder }

// CertPool returns a pool holding the server's CA.
func (s *Server) CertPool() *x509.CertPool { return s.caPool.Clone() }

// HTTPClient returns a client that trusts the server's CA and dials
// loopback only.
func (s *Server) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:     labnet.Dialer().DialContext,
		TLSClientConfig: &tls.Config{RootCAs: s.CertPool(), MinVersion: tls.VersionTLS12},
	}}
}

// after runs fn after d on a timer Close stops; fn runs without the lock.
// The caller holds s.mu.
func (s *Server) after(d time.Duration, fn func()) {
	if s.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		delete(s.timers, t)
		s.mu.Unlock()
		fn()
	})
	s.timers[t] = struct{}{}
}

func (s *Server) routes() {
	rt := &s.router
	rt.handle("GET", "/version", s.getVersion)
	rt.handle("GET", "/access/permissions", s.getPermissions)
	s.clusterRoutes(rt)
	s.storageRoutes(rt)
	s.qemuRoutes(rt)
	s.taskRoutes(rt)
	s.poolRoutes(rt)
	s.firewallRoutes(rt)
	s.sdnRoutes(rt)
}
