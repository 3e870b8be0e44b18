package talosnode

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// ServiceName is the labnet service name of every Talos API call.
const ServiceName = "talos"

// Timing is how long simulated work takes. Zero fields take the defaults
// (DefaultTiming); tests use milliseconds.
type Timing struct {
	// Boot is power-on to apid listening.
	Boot time.Duration
	// Services is apid listening to the CRI being up: Bootstrap answers
	// "bootstrap is not available yet" until then.
	Services time.Duration
	// EtcdJoin is how long a control plane takes from adding itself to the
	// etcd member list to running as a started, voting member.
	EtcdJoin time.Duration
	// RebootDown is how long apid stays down during a reboot.
	RebootDown time.Duration
	// Install is how long an upgrade spends installing before its reboot.
	Install time.Duration
	// KubeletRestart is how long the kubelet takes to come back after a
	// live apply changed its spec.
	KubeletRestart time.Duration
	// Reset is how long a reset spends wiping before the node stops.
	Reset time.Duration
	// HealthPoll is the polling interval of the server-side health checks.
	HealthPoll time.Duration
	// EtcdDial is how long a control plane's local etcd client waits for
	// its etcd (Talos's blocking dial of localhost:2379, 5 s) before
	// EtcdSnapshot and EtcdStatus fail on a node whose etcd does not run.
	EtcdDial time.Duration
}

// DefaultTiming is a lab that feels like a fast cloud.
func DefaultTiming() Timing {
	return Timing{
		Boot:           2 * time.Second,
		Services:       500 * time.Millisecond,
		EtcdJoin:       500 * time.Millisecond,
		RebootDown:     2 * time.Second,
		Install:        time.Second,
		KubeletRestart: 500 * time.Millisecond,
		Reset:          500 * time.Millisecond,
		HealthPoll:     200 * time.Millisecond,
		EtcdDial:       5 * time.Second,
	}
}

// withDefaults fills zero fields from DefaultTiming.
func (t Timing) withDefaults() Timing {
	d := DefaultTiming()
	fill := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&t.Boot, d.Boot)
	fill(&t.Services, d.Services)
	fill(&t.EtcdJoin, d.EtcdJoin)
	fill(&t.RebootDown, d.RebootDown)
	fill(&t.Install, d.Install)
	fill(&t.KubeletRestart, d.KubeletRestart)
	fill(&t.Reset, d.Reset)
	fill(&t.HealthPoll, d.HealthPoll)
	fill(&t.EtcdDial, d.EtcdDial)
	return t
}

// Knobs are a node's scripted faults. The zero value is a healthy node. In
// JSON, rebootDown is a Go duration string ("5s", "1m30s"); a number is
// read as nanoseconds.
type Knobs struct {
	// NeverBoots keeps apid down forever: the VM runs, Talos never answers.
	NeverBoots bool `json:"neverBoots,omitempty"`
	// ResetFails makes the reset sequence fail with this message after the
	// API accepted it: the node keeps running, unwiped, still an etcd
	// member (what a failing graceful reset looks like from outside).
	ResetFails string `json:"resetFails,omitempty"`
	// RebootDown overrides Timing.RebootDown for this node: apid stays down
	// this long after every reboot.
	RebootDown time.Duration `json:"rebootDown,omitempty"`
	// NeverLeavesEtcd makes every etcd leave of this node a silent no-op:
	// a graceful reset or EtcdLeaveCluster succeeds but the member stays in
	// the list (the node is wiped anyway).
	NeverLeavesEtcd bool `json:"neverLeavesEtcd,omitempty"`
	// EtcdNeverStarts leaves this control plane's etcd member added but
	// never started: it is listed with an empty name (etcd's "unstarted"
	// member) and counts towards the quorum size without being up.
	EtcdNeverStarts bool `json:"etcdNeverStarts,omitempty"`
	// ResetHangs makes a reset sequence hang once the API accepted it, as
	// one stuck in its drain does: the node keeps running and answering
	// (stage resetting), still an etcd member, nothing wiped; another
	// Reset is accepted but starts nothing (machined's sequence lock). A
	// reboot or power-off ends the hung sequence; clearing the knob lets
	// it go on to the end.
	ResetHangs bool `json:"resetHangs,omitempty"`
	// RebootHangs makes every reboot Talos itself runs never end: a Reboot
	// call (the one a client makes after a LifecycleService install
	// included: a control plane that never comes back from its upgrade),
	// an apply that reboots (Talos ≤ 1.13), a legacy upgrade's reboot, the
	// install from maintenance mode. apid goes down and stays down; the VM
	// runs. A provider restart or power cycle boots the node normally;
	// clearing the knob lets the hung reboot finish.
	RebootHangs bool `json:"rebootHangs,omitempty"`
	// DrainBlocked is not Talos's: the lab's Kubernetes reads it. While it
	// is set, the node's Kubernetes Node carries a controller-owned pod
	// under a PodDisruptionBudget that allows no disruption, so every
	// eviction of it answers 429 and a drain never finishes; clearing it
	// lets the budget allow one.
	DrainBlocked bool `json:"drainBlocked,omitempty"`
	// InstallFails makes the installer of every LifecycleService.Upgrade
	// fail with this message: the stream carries it and ends with exit code
	// 1 (not a gRPC error, as on Talos), nothing is installed and the node
	// keeps its image, also after a reboot. The legacy MachineService.Upgrade
	// does not run it.
	InstallFails string `json:"installFails,omitempty"`
	// BootsOldVersion makes every upgrade roll back at its reboot, as
	// Talos's A/B boot does when the new image does not come up: the
	// upgrade installs (exit code 0), but the node boots its old Talos
	// version and schematic again and the installed image is dropped. Both
	// upgrade paths.
	BootsOldVersion bool `json:"bootsOldVersion,omitempty"`
	// LosesRestoreAtReboot is not Talos's: it is the open Omni bug
	// (omni#3300) where a recovered etcd is lost at the first reboot. The
	// first reboot of this node after its etcd was recovered from a
	// snapshot (Bootstrap with RecoverEtcd) empties the cluster's real
	// etcd (Options.EtcdRestore with no data): the snapshot's objects are
	// gone, the revision starts again. Set it on every control plane to
	// catch whichever one a restore picks.
	LosesRestoreAtReboot bool `json:"losesRestoreAtReboot,omitempty"`
}

// knobsJSON is Knobs on the wire.
type knobsJSON struct {
	knobsFields
	RebootDown jsonDuration `json:"rebootDown,omitzero"`
}

// knobsFields is Knobs without its methods, so knobsJSON can embed it (its
// own rebootDown, shallower, wins).
type knobsFields Knobs

// MarshalJSON writes rebootDown as a duration string.
func (k Knobs) MarshalJSON() ([]byte, error) {
	return json.Marshal(knobsJSON{knobsFields: knobsFields(k), RebootDown: jsonDuration(k.RebootDown)})
}

// UnmarshalJSON reads rebootDown as a duration string or nanoseconds.
func (k *Knobs) UnmarshalJSON(data []byte) error {
	var w knobsJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*k = Knobs(w.knobsFields)
	k.RebootDown = time.Duration(w.RebootDown)
	return nil
}

// jsonDuration is a time.Duration written as "5s" and read from "5s" or a
// number of nanoseconds.
type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *jsonDuration) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		var ns int64
		if json.Unmarshal(data, &ns) != nil {
			return fmt.Errorf("duration %s: want a string like \"5s\" or nanoseconds", data)
		}
		*d = jsonDuration(ns)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = jsonDuration(v)
	return nil
}

// Extension is one system extension an installer image carries.
type Extension struct {
	// Name is the official name ("siderolabs/qemu-guest-agent").
	Name string
	// Version is the extension's version; empty uses the Talos version.
	Version string
}

// SchematicLookup resolves an Image Factory schematic id to the system
// extensions it installs; ok is false for a schematic the factory does not
// know (an upgrade to it fails like a failed image pull).
type SchematicLookup func(id string) (exts []Extension, ok bool)

// NodeInfo is what the health check knows of a node.
type NodeInfo struct {
	// Hostname is the node's hostname.
	Hostname string
	// Address is its internal IP.
	Address netip.Addr
	// ControlPlane reports a control plane.
	ControlPlane bool
}

// KubeAPI is the cluster's Kubernetes API as Talos's server-side health
// check sees it. The lab plugs in the real kube-apiserver; nil skips the
// Kubernetes conditions.
type KubeAPI interface {
	// Check evaluates one Kubernetes condition of the health check, named
	// as Talos names it ("all k8s nodes to report ready", "coredns to report
	// ready", …, see KubernetesChecks), for the nodes the check expects. It
	// returns nil once the condition holds, ErrSkip when it does not apply.
	Check(ctx context.Context, condition string, nodes []NodeInfo) error
}

// BootstrapInfo is handed to Options.OnBootstrap when a cluster's etcd is
// bootstrapped: what the lab needs to start the cluster's kube-apiserver.
type BootstrapInfo struct {
	// ClusterName is the Kubernetes cluster name.
	ClusterName string
	// Endpoint is the cluster endpoint (https://<vip>:6443).
	Endpoint *url.URL
	// CACert and CAKey are the Kubernetes CA (PEM) from the machine config:
	// the API server's client CA and the signer of admin kubeconfigs.
	CACert, CAKey []byte
	// CertSANs are the API server certificate's extra SANs from the machine
	// config (cluster.apiServer.certSANs: the advertised address, the VIP).
	CertSANs []string
	// Cluster is the simulated cluster.
	Cluster *Cluster
}

// EventKind says what happened to a node.
type EventKind string

// Node events.
const (
	// EventBooted: apid came up with the node's configuration.
	EventBooted EventKind = "booted"
	// EventDown: the node went down (reboot, shutdown, upgrade reboot).
	EventDown EventKind = "down"
	// EventReset: the node was wiped.
	EventReset EventKind = "reset"
	// EventConfig: the Kubernetes side of a running node changed: a
	// configuration was applied without a reboot (every live apply sends
	// one), or its kubelet restarted onto a new image, or its control-plane
	// static pods came, went or changed (NodeStatus.StaticPods).
	EventConfig EventKind = "config"
)

// Event is a node state change, for the lab's Kubernetes side (Node
// objects, the kubelet).
type Event struct {
	Kind EventKind
	// Node is the node's state after the change.
	Node NodeStatus
}

// Options configure a Fleet.
type Options struct {
	// Recorder records every call; nil records nothing.
	Recorder *labnet.Recorder
	// Injector injects API faults; nil injects none.
	Injector *labnet.Injector
	// Timing is how long simulated work takes.
	Timing Timing
	// Port is apid's port; 0 means 50000.
	Port int
	// Schematics resolves installer schematics to extensions; nil knows
	// every schematic and no extension. It is called with the fleet's lock
	// held: it must not call back into the fleet.
	Schematics SchematicLookup
	// OnBootstrap is called (in its own goroutine, which Fleet.Close waits
	// for) when a cluster's etcd is bootstrapped.
	OnBootstrap func(BootstrapInfo)
	// KubeAPI returns a cluster's Kubernetes API for the health check
	// (called once per cluster, on the first health check); nil skips the
	// Kubernetes conditions.
	KubeAPI func(*Cluster) KubeAPI
	// OnEvent is called (synchronously, keep it short) on node changes.
	OnEvent func(Event)
	// EtcdEndpoint returns the client URL of a cluster's real etcd, the one
	// the lab's kube-apiserver of that cluster stores in
	// ("http://127.x.y.z:port"), or "" while it has none: a control plane
	// whose simulated etcd member runs answers EtcdSnapshot with that
	// etcd's snapshot and EtcdStatus with its status. nil: no cluster has
	// one (both fail as on a node whose etcd does not run). Called without
	// the fleet's lock.
	EtcdEndpoint func(*Cluster) string
	// EtcdLost is called (in its own goroutine, which Fleet.Close waits
	// for) when the last control plane of a cluster holding etcd data
	// loses it (a reset wiping EPHEMERAL, or the whole disk): the
	// cluster's real etcd loses its data too.
	EtcdLost func(*Cluster)
	// EtcdRestore replaces the real etcd of the cluster info names (its
	// API started first if it has none) with the data directory fill
	// writes into the directory it is given (nil fill: an empty etcd),
	// and returns once the API serves it; a fill that fails changes
	// nothing. Bootstrap with RecoverEtcd restores the uploaded snapshot
	// with it, Knobs.LosesRestoreAtReboot empties it. nil: the snapshot
	// is restored into a directory thrown away.
	EtcdRestore func(info BootstrapInfo, fill func(dir string) error) error
}
