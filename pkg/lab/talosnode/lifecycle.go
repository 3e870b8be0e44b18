package talosnode

import (
	"bytes"
	"errors"
	"time"

	"github.com/siderolabs/crypto/x509"

	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// PowerOn starts the VM: apid listens after Timing.Boot (unless the node
// never boots). A running node is left alone.
func (n *Node) PowerOn() {
	f := n.fleet
	f.mu.Lock()
	if n.powered {
		f.mu.Unlock()
		return
	}
	n.powered, n.bootErr = true, nil
	n.gen++
	n.stage = runtime.MachineStageBooting
	g, boot := n.gen, f.timing.Boot
	f.mu.Unlock()
	n.syncResources()
	start := time.Now()
	f.after(boot, func() {
		if rec := f.opts.Recorder; rec != nil {
			rec.Work(ServiceName, "boot?node="+n.addr.String(), start, time.Since(start))
		}
		n.bootDone(g)
	})
}

// PowerOff stops the VM at once (a hard stop, as a cloud's "stop" does):
// apid goes away, etcd on it stops. The disk keeps its state.
func (n *Node) PowerOff() {
	f := n.fleet
	f.mu.Lock()
	wasUp := n.powered
	n.powered = false
	n.down(runtime.MachineStageUnknown)
	c := n.cluster
	f.mu.Unlock()
	n.stopAPI()
	if wasUp {
		f.emit(EventDown, n)
		n.changed(c)
	}
}

// Restart is a provider restart (ACPI shutdown, then start): the node
// reboots and comes back after its reboot downtime, even when its own
// reboots hang (Knobs.RebootHangs).
func (n *Node) Restart() {
	n.restart(false)
}

// down marks the OS down and bumps the boot generation so timers of the
// previous boot do nothing, and a hung reset or reboot is over; f.mu held.
func (n *Node) down(stage runtime.MachineStage) {
	n.gen++
	n.osUp, n.apiUp, n.servicesUp, n.rebooting = false, false, false, false
	n.hungReset, n.hungBoot = nil, 0
	n.kubelet, n.staticPods = kubeletRun{}, nil
	n.stage = stage
	n.restoring, n.restoreErr, n.recovered = false, nil, false
	if n.cluster != nil {
		n.cluster.etcd.elect()
	}
}

// reboot is a reboot Talos itself runs (see Knobs.RebootHangs).
func (n *Node) reboot() {
	n.restart(true)
}

// restart takes the node down now and boots it after its reboot downtime,
// into a staged configuration or an upgrade's image if there is one;
// Talos's own reboot (own) hangs instead while Knobs.RebootHangs is set.
func (n *Node) restart(own bool) {
	f := n.fleet
	f.mu.Lock()
	if !n.powered {
		f.mu.Unlock()
		return
	}
	var lose func()
	if n.rebootLosesRestore() {
		info := n.bootstrapInfo(n.cfg)
		lose = func() { n.loseRestore(info) }
	}
	n.down(runtime.MachineStageRebooting)
	g, wait, c := n.gen, n.rebootDown(), n.cluster
	hang := own && n.knobs.RebootHangs
	if hang {
		n.hungBoot = g
	}
	f.mu.Unlock()
	if lose != nil {
		f.wg.Go(lose)
	}
	n.stopAPI()
	f.emit(EventDown, n)
	n.changed(c)
	if !hang {
		f.after(wait, func() { n.bootDone(g) })
	}
}

// rebootSoon reboots after the RPC that asked for it returned.
func (n *Node) rebootSoon() {
	n.fleet.after(time.Millisecond, n.reboot)
}

// bootDone brings apid up at the end of a boot of generation g.
func (n *Node) bootDone(g uint64) {
	f := n.fleet
	f.mu.Lock()
	if n.gen != g || !n.powered || n.knobs.NeverBoots {
		f.mu.Unlock()
		return
	}
	n.newBoot(g)
	if n.staged != nil {
		n.cfg, n.staged = n.staged, nil
		n.cluster = f.clusterFor(n.cfg)
	}
	if n.cfg == nil && n.userData != nil {
		// an empty STATE: Talos fetches its configuration from the platform
		n.install(n.userData)
	}
	if n.pending != nil {
		if !n.knobs.BootsOldVersion {
			n.image = *n.pending
		}
		n.pending = nil
	}
	mc, host := n.cfg, n.hostname()
	f.mu.Unlock()

	serve, err := n.startAPI(mc, host)
	if err != nil {
		f.mu.Lock()
		n.bootErr = err
		f.mu.Unlock()
		if errors.Is(err, errNoTrustd) {
			// a worker keeps asking the control planes for its certificate
			f.after(f.timing.Boot, func() { n.bootDone(g) })
		}
		return
	}

	f.mu.Lock()
	if n.gen != g || !n.powered {
		f.mu.Unlock()
		n.stopAPI()
		serve()
		return
	}
	n.apiUp, n.bootErr = true, nil
	n.boots++
	c := n.cluster
	if n.cfg == nil {
		n.stage = runtime.MachineStageMaintenance
	} else {
		n.osUp, n.stage = true, runtime.MachineStageRunning
		c.register(n)
		c.etcd.elect()
		// the kubelet starts with this configuration; the boot's own event
		// carries the node's Kubernetes side
		n.kubelet = kubeletRun{spec: renderKubelet(n.cfg, n.hostname(), n.addr)}
		n.kubeSeen = n.statusLocked().kubeFacing()
	}
	services := f.timing.Services
	f.mu.Unlock()

	// resources first, so whoever reaches the new apid sees them current
	n.changed(c)
	serve()
	if mc != nil {
		f.emit(EventBooted, n)
		f.after(services, func() { n.servicesDone(g) })
	}
}

// servicesDone marks the CRI up; a control plane of a bootstrapped cluster
// joins etcd.
func (n *Node) servicesDone(g uint64) {
	f := n.fleet
	f.mu.Lock()
	if n.gen != g || !n.osUp {
		f.mu.Unlock()
		return
	}
	n.servicesUp = true
	if n.cfg.controlPlane() && n.cluster.etcd.bootstrapped && !n.etcdData {
		n.joinEtcd()
	}
	c := n.cluster
	f.mu.Unlock()
	n.changed(c)
}

// joinEtcd adds the node to etcd as an unstarted learner, then starts and
// promotes it after Timing.EtcdJoin; f.mu held.
func (n *Node) joinEtcd() {
	f := n.fleet
	c := n.cluster
	if !c.etcd.quorum() {
		// Talos's etcd keeps trying to add itself through the other
		// control planes, which needs a leader
		n.retryJoin()
		return
	}
	m := c.etcd.add(n)
	n.etcdData = true
	g := n.gen
	f.after(f.timing.EtcdJoin, func() {
		f.mu.Lock()
		ok := n.gen == g && n.osUp && !n.knobs.EtcdNeverStarts && c.etcd.member(m.id) != nil
		if ok {
			c.etcd.start(m)
		}
		f.mu.Unlock()
		if ok {
			c.nodesChanged()
		}
	})
}

// retryJoin tries to join etcd again after Timing.EtcdJoin while this
// boot's control plane still has no etcd data; f.mu held.
func (n *Node) retryJoin() {
	f := n.fleet
	g := n.gen
	f.after(f.timing.EtcdJoin, func() {
		f.mu.Lock()
		waiting := n.gen == g && n.osUp && n.servicesUp && !n.etcdData && !n.restoring && n.cluster.etcd.bootstrapped
		if waiting {
			n.joinEtcd()
		}
		joined, c := waiting && n.etcdData, n.cluster
		f.mu.Unlock()
		if joined {
			c.nodesChanged()
		}
	})
}

// changed refreshes COSI resources after a change of this node: its own
// and every member's of its cluster.
func (n *Node) changed(c *Cluster) {
	n.syncResources()
	if c != nil {
		c.nodesChanged()
	}
}

// trustd returns the OS CA (certificate and key) that issues this node's
// apid certificate: its own machine.ca on a control plane, a running
// control plane's for a worker (nil while there is none).
func (n *Node) trustd(mc *machineConfig) *x509.PEMEncodedCertificateAndKey {
	if len(mc.osCA.Key) > 0 {
		return mc.osCA
	}
	f := n.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.nodes {
		if o.osUp && o.cfg != nil && len(o.cfg.osCA.Key) > 0 && bytes.Equal(o.cfg.osCA.Crt, mc.osCA.Crt) {
			return o.cfg.osCA
		}
	}
	return nil
}

// startAPI builds apid and opens its listener; serve starts answering
// (on a server stopped meanwhile it just closes the listener).
func (n *Node) startAPI(mc *machineConfig, hostname string) (serve func(), err error) {
	srv, err := n.api.newServer(mc, hostname)
	if err != nil {
		return nil, err
	}
	l, err := listen(n.fleet.ctx, n.Endpoint())
	if err != nil {
		return nil, err
	}
	l = n.fleet.conns.track(l)
	n.srvMu.Lock()
	n.srv = srv
	n.srvMu.Unlock()
	return func() { n.fleet.wg.Go(func() { _ = srv.Serve(l) }) }, nil
}

// stopAPI closes apid: in-flight calls get a short grace, then the
// connections drop (what clients of a rebooting node see).
func (n *Node) stopAPI() {
	n.srvMu.Lock()
	srv := n.srv
	n.srv = nil
	n.srvMu.Unlock()
	if srv == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(50 * time.Millisecond):
		srv.Stop()
		<-done
	}
}
