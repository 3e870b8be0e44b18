package nodes

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// clients are the sessions one run shares, dialled on first use through
// the seams: the Kubernetes client of the cluster directory's kubeconfig
// and the Talos session through the first control plane. run owns them
// and closes them at its end.
type clients struct {
	seams seams
	cfg   *config.Cluster

	// mu guards the memoised clients: a worker pass asks for them from
	// several goroutines, possibly before the first dial.
	mu    sync.Mutex
	kube  kubeAPI
	talos talosAPI
	// talosAt is the endpoint talos was dialled at.
	talosAt string
}

func newClients(cfg *config.Cluster, s seams) *clients {
	return &clients{seams: s, cfg: cfg}
}

// close ends the Talos session.
func (c *clients) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeTalos()
}

// closeTalos ends the Talos session; c.mu is held.
func (c *clients) closeTalos() {
	if c.talos != nil {
		_ = c.talos.Close()
		c.talos, c.talosAt = nil, ""
	}
}

// kubeconfigPath is the cluster directory's kubeconfig and whether it
// exists.
func (c *clients) kubeconfigPath() (string, bool) {
	return phase.ClientFile(c.cfg, config.KubeconfigFile)
}

// kubeClient is the memoised client of the kubeconfig.
func (c *clients) kubeClient() (kubeAPI, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kube != nil {
		return c.kube, nil
	}
	path, _ := c.kubeconfigPath()
	kc, err := c.seams.openKube(path)
	if err != nil {
		return nil, err
	}
	c.kube = kc
	return kc, nil
}

// forgetKube drops the memoised client (the kubeconfig was rewritten).
func (c *clients) forgetKube() {
	c.mu.Lock()
	c.kube = nil
	c.mu.Unlock()
}

// talosSession is the memoised Talos session, authenticated by id,
// through the first control plane's real address as o knows it (never
// the VIP, I-A1).
func (c *clients) talosSession(ctx context.Context, id *identity.Identity, o *observed) (talosAPI, string, error) {
	host := c.cfg.Hostnames()[0].Hostname
	cp1, ok := o.address(host)
	if !ok {
		return nil, "", fmt.Errorf("no address known for %s: the network phase reported none", host)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.talos != nil && c.talosAt == cp1 {
		return c.talos, cp1, nil
	}
	if id == nil {
		return nil, "", errors.New("the cluster identity is not loaded")
	}
	c.closeTalos()
	s, err := c.seams.dialTalos(ctx, id, c.cfg.Name, cp1)
	if err != nil {
		return nil, "", err
	}
	c.talos, c.talosAt = s, cp1
	return s, cp1, nil
}
