package talosnode

import (
	"cmp"
	"encoding/base32"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cosi-project/runtime/pkg/state"
	"github.com/cosi-project/runtime/pkg/state/impl/inmem"
	"github.com/cosi-project/runtime/pkg/state/impl/namespaced"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc"
)

// Node is one simulated Talos machine: a VM that boots from the machine
// configuration it was given and serves the Talos API on <addr>:50000.
// Its state is guarded by the fleet's mutex.
type Node struct {
	fleet  *Fleet
	addr   netip.Addr
	nodeID string
	st     state.State
	resMu  sync.Mutex
	api    *apiServices

	knobs Knobs
	// cfg is the active configuration; nil when wiped (maintenance).
	cfg *machineConfig
	// staged is a configuration applied at the next boot (STAGED mode,
	// and the REBOOT mode of Talos ≤ 1.13).
	staged *machineConfig
	// userData is the configuration the platform delivers at boot
	// (user_data, the cidata ISO): a node without a configuration (new, or
	// wiped by a reset) takes it when it boots.
	userData *machineConfig
	// pending is the image an upgrade boots into.
	pending *Image
	cluster *Cluster
	image   Image
	stage   runtime.MachineStage
	powered bool
	// osUp: Talos runs with a configuration (not maintenance, not down).
	osUp bool
	// apiUp: apid listens (normal or maintenance mode).
	apiUp bool
	// servicesUp: the CRI runs, so Bootstrap is allowed.
	servicesUp bool
	// etcdData: the etcd data directory is not empty.
	etcdData   bool
	etcdMember *etcdMember
	// etcdRecovery is the state of an etcd recovery (recover.go).
	etcdRecovery
	// pulled are the images pulled into containerd.
	pulled map[pullKey]pulledImage
	// installing: a LifecycleService install runs.
	installing bool
	// rebooting refuses further applies (Talos ≤ 1.13 after a REBOOT apply).
	rebooting bool
	gen       uint64
	boots     int
	bootErr   error
	// lastResetError is why the last reset sequence failed.
	lastResetError error
	// boot is the current boot's id and event buffer.
	boot bootState
	// hungReset is the reset sequence Knobs.ResetHangs holds, if any.
	hungReset *resetSeq
	// hungBoot is the boot generation whose reboot Knobs.RebootHangs
	// holds (0: none).
	hungBoot uint64
	// kubelet is the kubelet of this boot.
	kubelet kubeletRun
	// staticPods are the control-plane static pods the kubelet runs, as
	// last published.
	staticPods []StaticPod
	// kubeSeen is the Kubernetes side of the node the last event carried
	// (see NodeStatus.kubeFacing).
	kubeSeen string

	srvMu sync.Mutex
	srv   *grpc.Server
}

// newNode creates a powered-off, unconfigured node.
func newNode(f *Fleet, addr netip.Addr, knobs Knobs) *Node {
	h := fnv.New128a()
	_, _ = h.Write(addr.AsSlice())
	n := &Node{
		fleet:  f,
		addr:   addr,
		nodeID: strings.TrimRight(base32.StdEncoding.EncodeToString(h.Sum(nil)), "="),
		st:     state.WrapCore(namespaced.NewState(inmem.Build)),
		knobs:  knobs,
		stage:  runtime.MachineStageUnknown,
	}
	n.api = newAPIServices(n)
	return n
}

// install makes mc the node's configuration in a fresh install, which
// runs its installer; f.mu held.
func (n *Node) install(mc *machineConfig) {
	n.configure(mc)
	n.image = mc.installer
}

// configure makes mc the node's configuration; f.mu held.
func (n *Node) configure(mc *machineConfig) {
	n.cfg, n.staged, n.pending = mc, nil, nil
	n.cluster = n.fleet.clusterFor(mc)
}

// SetUserData replaces the configuration the platform delivers at boot;
// nil removes it (the cidata ISO detached, user_data gone), so a wiped node
// boots into maintenance mode.
func (n *Node) SetUserData(config []byte) error {
	var mc *machineConfig
	if len(config) > 0 {
		var err error
		if mc, err = parseMachineConfig(config); err != nil {
			return fmt.Errorf("talos node %s: %w", n.addr, err)
		}
	}
	n.fleet.mu.Lock()
	defer n.fleet.mu.Unlock()
	n.userData = mc
	return nil
}

// Address is the node's address.
func (n *Node) Address() netip.Addr { return n.addr }

// Endpoint is apid's address (host:port).
func (n *Node) Endpoint() string {
	return netip.AddrPortFrom(n.addr, uint16(n.fleet.opts.Port)).String()
}

// hostname is the configured hostname, or the one Talos would make up;
// f.mu held (or the config is immutable).
func (n *Node) hostname() string {
	if n.cfg != nil && n.cfg.hostname != "" {
		return n.cfg.hostname
	}
	return "talos-" + strings.ToLower(n.nodeID[:3]) + "-" + strings.ToLower(n.nodeID[3:6])
}

// etcdRunning reports whether this node's etcd runs; f.mu held.
func (n *Node) etcdRunning() bool {
	return n.osUp && n.etcdData && n.cfg != nil && n.cfg.controlPlane()
}

// NodeStatus is a snapshot of a node.
type NodeStatus struct {
	Address      netip.Addr `json:"address"`
	Hostname     string     `json:"hostname"`
	Cluster      string     `json:"cluster,omitempty"`
	ControlPlane bool       `json:"controlPlane"`
	Powered      bool       `json:"powered"`
	APIUp        bool       `json:"apiUp"`
	Maintenance  bool       `json:"maintenance"`
	Stage        string     `json:"stage"`
	Version      string     `json:"version,omitempty"`
	Schematic    string     `json:"schematic,omitempty"`
	Platform     string     `json:"platform,omitempty"`
	// KubeletVersion is the tag of the kubelet image the node runs: its
	// configuration's at boot, a live apply's once the kubelet restarted.
	KubeletVersion string            `json:"kubeletVersion,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Taints         map[string]string `json:"taints,omitempty"`
	EtcdMember     uint64            `json:"etcdMember,omitempty"`
	BootError      string            `json:"bootError,omitempty"`
	ResetError     string            `json:"resetError,omitempty"`
	// Boots counts the boots that brought apid up.
	Boots int `json:"boots"`
	// VIPs are the virtual IPs the configuration lets the node hold
	// (Layer2VIPConfig); which node holds one is the lab's business.
	VIPs []netip.Addr `json:"vips,omitempty"`
	// StaticPods are the control-plane static pods the kubelet runs (a
	// control plane's, while its etcd is healthy): what the mirror pods in
	// kube-system show.
	StaticPods []StaticPod `json:"staticPods,omitempty"`
	// Knobs are the node's scripted faults.
	Knobs Knobs `json:"knobs,omitzero"`
}

// StaticPod is a control-plane static pod as its mirror pod shows it.
type StaticPod struct {
	// Component is "kube-apiserver", "kube-controller-manager" or
	// "kube-scheduler".
	Component string `json:"component"`
	// Image is its container image.
	Image string `json:"image"`
	// ConfigVersion is the talos.dev/config-version annotation: the
	// version of the config resource the pod was rendered from (final-<component>
	// on Talos ≥ 1.14, <component> before), as a decimal string.
	ConfigVersion string `json:"configVersion"`
}

// kubeFacing is what the lab's Kubernetes mirrors of a node (its Node
// object and mirror pods); a change while the node runs is an EventConfig.
func (s NodeStatus) kubeFacing() string {
	return fmt.Sprint(s.KubeletVersion, s.Labels, s.Taints, s.StaticPods)
}

// Status returns a snapshot of the node.
func (n *Node) Status() NodeStatus {
	n.fleet.mu.Lock()
	defer n.fleet.mu.Unlock()
	return n.statusLocked()
}

func (n *Node) statusLocked() NodeStatus {
	s := NodeStatus{
		Address: n.addr, Hostname: n.hostname(), Powered: n.powered, APIUp: n.apiUp,
		Maintenance: n.apiUp && n.cfg == nil, Stage: n.stage.String(),
		Version: n.image.Version, Schematic: n.image.Schematic, Platform: n.image.Platform,
		Boots: n.boots, Knobs: n.knobs,
	}
	if n.cfg != nil {
		s.Cluster, s.ControlPlane = n.cfg.clusterName, n.cfg.controlPlane()
		s.KubeletVersion = imageTag(cmp.Or(n.kubelet.spec.Image, n.cfg.kubeletImage))
		s.Labels, s.Taints = maps.Clone(n.cfg.labels), maps.Clone(n.cfg.taints)
		s.VIPs = slices.Clone(n.cfg.vips)
	}
	if n.osUp {
		s.StaticPods = slices.Clone(n.staticPods)
	}
	if n.etcdMember != nil && n.cluster != nil && n.cluster.etcd.member(n.etcdMember.id) != nil {
		s.EtcdMember = n.etcdMember.id
	}
	if n.bootErr != nil {
		s.BootError = n.bootErr.Error()
	}
	if n.lastResetError != nil {
		s.ResetError = n.lastResetError.Error()
	}
	return s
}

// Knobs returns the node's scripted faults.
func (n *Node) Knobs() Knobs {
	n.fleet.mu.Lock()
	defer n.fleet.mu.Unlock()
	return n.knobs
}

// SetKnobs replaces the node's scripted faults. A hung reset or reboot
// whose knob is cleared goes on.
func (n *Node) SetKnobs(k Knobs) {
	f := n.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	n.knobs = k
	if r := n.hungReset; r != nil && !k.ResetHangs {
		n.hungReset = nil
		f.after(0, func() { n.resetSequence(*r) })
	}
	if g := n.hungBoot; g != 0 && !k.RebootHangs {
		n.hungBoot = 0
		f.after(n.rebootDown(), func() { n.bootDone(g) })
	}
}

// Cluster is the cluster of the node's configuration (nil when wiped).
func (n *Node) Cluster() *Cluster {
	n.fleet.mu.Lock()
	defer n.fleet.mu.Unlock()
	if n.cfg == nil {
		return nil
	}
	return n.cluster
}

// WaitAPI waits until apid answers (or timeout passes).
func (n *Node) WaitAPI(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if n.Status().APIUp {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("talos node " + n.addr.String() + ": apid did not come up")
		}
		time.Sleep(time.Millisecond)
	}
}

// rebootDown is how long apid stays down in a reboot; f.mu held.
func (n *Node) rebootDown() time.Duration {
	if n.knobs.RebootDown > 0 {
		return n.knobs.RebootDown
	}
	return n.fleet.timing.RebootDown
}
