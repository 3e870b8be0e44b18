package argocd

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/labnet"
)

// Namespace is where Argo CD keeps its Applications, AppProjects and
// cluster and repository Secrets.
const Namespace = "argocd"

// Defaults for Options.
const (
	DefaultCRDTimeout = 30 * time.Second
	crdPoll           = 20 * time.Millisecond
)

// Options configure Start.
type Options struct {
	// Address is where the management cluster's API is served:
	// "127.x.y.z:6443", or "127.x.y.z:0" for a free port.
	Address string
	// DataDir holds the apiserver's etcd data, certificates and log.
	// Required.
	DataDir string
	// Injector adds faults to requests to Address (service "kubernetes");
	// nil adds none.
	Injector *labnet.Injector
	// Recorder records every request to Address; nil: a new one.
	Recorder *labnet.Recorder
	// Binary is the kube-apiserver helper; "" resolves it with
	// kubeapi.Binary.
	Binary string
	// CACertPEM and CAKeyPEM are the management cluster's Kubernetes CA;
	// empty: a new one is generated (as `talosctl gen secrets` would).
	CACertPEM, CAKeyPEM []byte
	// StartTimeout bounds the apiserver's start (kubeapi's default if 0).
	StartTimeout time.Duration
	// CRDTimeout bounds installing the CRDs and waiting for them to be
	// Established; default DefaultCRDTimeout.
	CRDTimeout time.Duration
	// Logf gets progress messages; nil discards them.
	Logf func(format string, args ...any)
}

// Management is a running Argo CD management cluster.
type Management struct {
	srv        *kubeapi.Server
	dyn        dynamic.Interface
	kubeconfig []byte
	caPEM      []byte
	started    time.Duration
}

// Start runs the management cluster's kube-apiserver on o.Address with its
// own CA, installs Argo CD's CRDs, waits until they are Established and
// creates namespace "argocd". ctx bounds the start only.
func Start(ctx context.Context, o Options) (_ *Management, err error) {
	begin := time.Now()
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.CRDTimeout <= 0 {
		o.CRDTimeout = DefaultCRDTimeout
	}
	if len(o.CACertPEM) == 0 || len(o.CAKeyPEM) == 0 {
		if o.CACertPEM, o.CAKeyPEM, err = kubeapi.NewCA(); err != nil {
			return nil, fmt.Errorf("argocd: management cluster CA: %w", err)
		}
	}
	srv, err := kubeapi.Start(ctx, kubeapi.Options{
		Binary:       o.Binary,
		Address:      o.Address,
		CACertPEM:    o.CACertPEM,
		CAKeyPEM:     o.CAKeyPEM,
		DataDir:      o.DataDir,
		StartTimeout: o.StartTimeout,
		Injector:     o.Injector,
		Recorder:     o.Recorder,
		Logf:         o.Logf,
	})
	if err != nil {
		return nil, fmt.Errorf("argocd: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, srv.Close())
		}
	}()
	m := &Management{srv: srv, caPEM: o.CACertPEM}
	if m.dyn, err = dynamic.NewForConfig(srv.RESTConfig()); err != nil {
		return nil, fmt.Errorf("argocd: dynamic client: %w", err)
	}
	if m.kubeconfig, err = srv.Kubeconfig(); err != nil {
		return nil, fmt.Errorf("argocd: %w", err)
	}
	o.Logf("argocd: management apiserver ready on %s after %v", srv.Address(), time.Since(begin).Round(time.Millisecond))
	crdCtx, cancel := context.WithTimeout(ctx, o.CRDTimeout)
	defer cancel()
	if err := installCRDs(crdCtx, m.dyn, crdPoll); err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	_, err = srv.Client().CoreV1().Namespaces().Create(crdCtx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("argocd: namespace %s: %w", Namespace, err)
	}
	m.started = time.Since(begin)
	o.Logf("argocd: CRDs Established and namespace %s created after %v", Namespace, m.started.Round(time.Millisecond))
	return m, nil
}

// Kubeconfig is an admin kubeconfig for Address (what secrets.yaml's
// argocd.kubeconfig points at): the management cluster's CA and a static
// token in group system:masters.
func (m *Management) Kubeconfig() []byte { return append([]byte(nil), m.kubeconfig...) }

// CACertPEM is the management cluster's Kubernetes CA.
func (m *Management) CACertPEM() []byte { return append([]byte(nil), m.caPEM...) }

// Address is the API's address, "127.x.y.z:port".
func (m *Management) Address() string { return m.srv.Address() }

// URL is the API's URL, "https://127.x.y.z:port".
func (m *Management) URL() string { return m.srv.URL() }

// Client is an admin clientset straight at the apiserver (not recorded, no
// faults), for the lab's plumbing and test fixtures.
func (m *Management) Client() kubernetes.Interface { return m.srv.Client() }

// Dynamic is an admin dynamic client like Client, for the Argo CD
// resources (ApplicationGVR, AppProjectGVR).
func (m *Management) Dynamic() dynamic.Interface { return m.dyn }

// RESTConfig is the admin configuration behind Client.
func (m *Management) RESTConfig() *rest.Config { return m.srv.RESTConfig() }

// Recorder holds every call made to Address.
func (m *Management) Recorder() *labnet.Recorder { return m.srv.Recorder() }

// Server is the underlying kube-apiserver.
func (m *Management) Server() *kubeapi.Server { return m.srv }

// StartDuration is how long Start took, from its call until the CRDs were
// Established and the namespace existed.
func (m *Management) StartDuration() time.Duration { return m.started }

// Close stops the apiserver. It is safe to call more than once.
func (m *Management) Close() error {
	if err := m.srv.Close(); err != nil {
		return fmt.Errorf("argocd: %w", err)
	}
	return nil
}
