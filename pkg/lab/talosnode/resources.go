package talosnode

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"strconv"
	"strings"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/extensions"
	"github.com/siderolabs/talos/pkg/machinery/resources/cluster"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// resourceView is what a node's COSI resources show, snapshotted under the
// fleet's lock.
type resourceView struct {
	// gen is the boot generation it was taken in.
	gen        uint64
	stage      runtime.MachineStage
	ready      bool
	unmet      []runtime.UnmetCondition
	image      Image
	extensions []Extension
	members    []memberView
	// config is the active machine configuration; nil when wiped.
	config *machineConfig
	// osUp, servicesUp and etcdHealthy are the node's, hostname and addr
	// what its kubelet registers.
	osUp, servicesUp, etcdHealthy bool
	hostname                      string
	addr                          netip.Addr
	// services are the running system services (none while apid is down).
	services []service
}

// memberView is one discovery member.
type memberView struct {
	id, nodeID, hostname, os string
	addr                     netip.Addr
	controlPlane             bool
}

// view snapshots the node's resources; f.mu held.
func (n *Node) view() resourceView {
	v := resourceView{
		gen: n.gen, stage: n.stage, image: n.image, config: n.cfg,
		osUp: n.osUp, servicesUp: n.servicesUp, hostname: n.hostname(), addr: n.addr,
	}
	if n.apiUp {
		v.services = n.services()
	}
	if n.cfg != nil && n.cfg.controlPlane() && n.osUp {
		v.etcdHealthy = n.etcdState().healthy
	}
	if n.cfg != nil && n.osUp {
		v.ready = n.servicesUp && !n.kubelet.restarting && (!n.cfg.controlPlane() || n.etcdMember != nil && n.etcdMember.up())
		if !v.ready {
			v.unmet = []runtime.UnmetCondition{{Name: "services", Reason: "some services are not healthy"}}
		}
	}
	if n.image.Schematic != "" && n.fleet.opts.Schematics != nil {
		v.extensions, _ = n.fleet.opts.Schematics(n.image.Schematic)
	}
	if n.cfg != nil && n.cluster != nil {
		for _, m := range n.cluster.members {
			v.members = append(v.members, memberView{
				id: m.hostname(), nodeID: m.nodeID, hostname: m.hostname(), addr: m.addr,
				os: fmt.Sprintf("Talos (%s)", m.image.Version), controlPlane: m.cfg != nil && m.cfg.controlPlane(),
			})
		}
	}
	return v
}

// syncResources brings the node's COSI state in line with the simulation,
// and tells the lab's Kubernetes (EventConfig) when the node's Kubernetes
// side changed while it runs.
func (n *Node) syncResources() {
	f := n.fleet
	n.resMu.Lock()
	f.mu.Lock()
	v := n.view()
	f.mu.Unlock()
	pods := n.syncAll(v)
	f.mu.Lock()
	if n.gen == v.gen {
		n.staticPods = pods
	}
	seen := n.statusLocked().kubeFacing()
	changed := n.osUp && seen != n.kubeSeen
	if changed {
		n.kubeSeen = seen
	}
	f.mu.Unlock()
	n.resMu.Unlock()
	if changed {
		f.emit(EventConfig, n)
	}
}

// syncAll publishes every resource of v and returns the static pods the
// kubelet runs; n.resMu held.
func (n *Node) syncAll(v resourceView) []StaticPod {
	ctx := context.Background()
	ms := runtime.NewMachineStatus()
	_ = safe.StateModify(ctx, n.st, ms, func(r *runtime.MachineStatus) error {
		r.TypedSpec().Stage = v.stage
		r.TypedSpec().Status = runtime.MachineStatusStatus{Ready: v.ready, UnmetConditions: v.unmet}
		return nil
	})
	n.syncDefinitions(ctx, v)
	n.syncExtensions(ctx, v)
	n.syncMembers(ctx, v)
	n.syncConfig(ctx, v)
	n.syncBootID(ctx)
	n.syncServices(ctx, v)
	return n.syncKubernetes(ctx, v)
}

// syncConfig publishes the active machine configuration as it was
// delivered or applied (what `talosctl get machineconfig` shows): the
// MachineConfig "v1alpha1" resource, none while the node is wiped.
func (n *Node) syncConfig(ctx context.Context, v resourceView) {
	var want []*configres.MachineConfig
	if v.config != nil {
		want = append(want, configres.NewMachineConfig(v.config.provider))
	}
	syncKind(ctx, n.st, configres.NamespaceName, configres.MachineConfigType, want)
}

// syncExtensions publishes ExtensionStatus resources for the running
// image's extensions and the Image Factory's schematic extension, and
// ImageFactorySchematic (Talos ≥ 1.14).
func (n *Node) syncExtensions(ctx context.Context, v resourceView) {
	var want []*runtime.ExtensionStatus
	for i, e := range v.extensions {
		r := runtime.NewExtensionStatus(runtime.NamespaceName, strconv.Itoa(i))
		name := e.Name[strings.LastIndex(e.Name, "/")+1:]
		version := e.Version
		if version == "" {
			version = v.image.Version
		}
		r.TypedSpec().Image = fmt.Sprintf("%03d.%s.sqsh", i, name)
		r.TypedSpec().Metadata = extensions.Metadata{Name: name, Version: version, Author: "Sidero Labs", Description: "system extension " + e.Name}
		want = append(want, r)
	}
	if v.image.Schematic != "" {
		r := runtime.NewExtensionStatus(runtime.NamespaceName, strconv.Itoa(len(want)))
		r.TypedSpec().Image = fmt.Sprintf("%03d.schematic.sqsh", len(want))
		r.TypedSpec().Metadata = extensions.Metadata{
			Name: "schematic", Version: v.image.Schematic,
			Author:      "Image Factory (https://" + v.image.Factory + ")",
			Description: "Virtual extension which specifies the schematic of the image built with Image Factory.",
		}
		want = append(want, r)
	}
	syncKind(ctx, n.st, runtime.NamespaceName, runtime.ExtensionStatusType, want)
	var schematic []*runtime.ImageFactorySchematic
	if v.image.Schematic != "" && atLeast114(v.image.Version) {
		r := runtime.NewImageFactorySchematic(runtime.NamespaceName, runtime.ImageFactorySchematicID)
		r.TypedSpec().SchematicID, r.TypedSpec().Flavor, r.TypedSpec().APIURL = v.image.Schematic, "Image Factory", "https://"+v.image.Factory
		schematic = append(schematic, r)
	}
	syncKind(ctx, n.st, runtime.NamespaceName, runtime.ImageFactorySchematicType, schematic)
}

// syncMembers publishes the cluster's discovery members.
func (n *Node) syncMembers(ctx context.Context, v resourceView) {
	want := make([]*cluster.Member, 0, len(v.members))
	for _, m := range v.members {
		r := cluster.NewMember(cluster.NamespaceName, m.id)
		spec := r.TypedSpec()
		spec.NodeID, spec.Hostname, spec.Addresses, spec.OperatingSystem = m.nodeID, m.hostname, []netip.Addr{m.addr}, m.os
		spec.MachineType = machineType(m.controlPlane)
		if m.controlPlane {
			spec.ControlPlane = &cluster.ControlPlane{APIServerPort: 6443}
		}
		want = append(want, r)
	}
	syncKind(ctx, n.st, cluster.NamespaceName, cluster.MemberType, want)
}

// syncKind makes the resources of one type in one namespace exactly want:
// unchanged ones are left alone (no watch churn), others updated, created
// or destroyed. Each of want then carries its stored version.
func syncKind[T resource.Resource](ctx context.Context, st state.State, ns resource.Namespace, typ resource.Type, want []T) {
	keep := map[resource.ID]bool{}
	for _, r := range want {
		keep[r.Metadata().ID()] = true
		cur, err := st.Get(ctx, r.Metadata())
		switch {
		case state.IsNotFoundError(err):
			_ = st.Create(ctx, r)
		case err != nil:
		case reflect.DeepEqual(cur.Spec(), r.Spec()):
			r.Metadata().SetVersion(cur.Metadata().Version())
		default:
			r.Metadata().SetVersion(cur.Metadata().Version())
			_ = st.Update(ctx, r)
		}
	}
	list, err := st.List(ctx, resource.NewMetadata(ns, typ, "", resource.VersionUndefined))
	if err != nil {
		return
	}
	for _, r := range list.Items {
		if !keep[r.Metadata().ID()] {
			_ = st.Destroy(ctx, r.Metadata())
		}
	}
}

// machineType is the discovery machine type.
func machineType(controlPlane bool) machine.Type {
	if controlPlane {
		return machine.TypeControlPlane
	}
	return machine.TypeWorker
}
