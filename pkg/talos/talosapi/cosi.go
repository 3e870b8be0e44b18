package talosapi

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// COSI is machinery's COSI state client of the endpoint; a node is chosen
// by client.WithNode in the context, as go-kubernetes' upgrade.NewChecks
// does itself. Its calls are not bounded here: bound ctx.
func (c *Client) COSI() state.State { return c.c.COSI }

// Schematic returns the Image Factory schematic id node runs: the version
// of the virtual "schematic" extension Image Factory images carry
// (ExtensionStatuses.runtime.talos.dev, what `talosctl get extensions`
// shows; every Talos version has it, the ImageFactorySchematic resource
// only ≥ 1.14). "" when the node reports no such extension (an image not
// built by an Image Factory); an error when the extensions cannot be
// read, never "" for unknown.
func (c *Client) Schematic(ctx context.Context, node string) (string, error) {
	var id string
	err := c.read(ctx, "List ExtensionStatuses", node, func(ctx context.Context) error {
		list, err := safe.StateListAll[*runtime.ExtensionStatus](ctx, c.c.COSI)
		if err != nil {
			return err
		}
		id = ""
		for e := range list.All() {
			if md := e.TypedSpec().Metadata; md.Name == constants.ImageFactorySchematicExtensionName {
				id = md.Version
			}
		}
		return nil
	})
	return id, err
}

// configTypes are the controlplane resources of the components'
// configurations, by component (k8s-app) name.
var configTypes = map[string]resource.Type{
	k8s.APIServerID:         k8s.APIServerConfigType,
	k8s.ControllerManagerID: k8s.ControllerManagerConfigType,
	k8s.SchedulerID:         k8s.SchedulerConfigType,
}

// ConfigVersion returns the COSI version of the configuration node renders
// the static pod of component (kube-apiserver, kube-controller-manager,
// kube-scheduler) from: the value of its mirror pod's
// talos.dev/config-version annotation once the pod runs it. upgrade-k8s
// waits, after a config change, for a version above the one before and a
// mirror pod annotated at least that (≥: the raw and final- counters
// differ, talos#14258). Talos ≥ 1.14 renders the pod from "final-<component>";
// Talos ≤ 1.13, which has no final- resource, from "<component>".
func (c *Client) ConfigVersion(ctx context.Context, node, component string) (uint64, error) {
	typ, ok := configTypes[component]
	if !ok {
		return 0, fmt.Errorf("talos ConfigVersion on %s: %q is not a control-plane component", node, component)
	}
	var v uint64
	err := c.read(ctx, "Get "+typ+" "+component, node, func(ctx context.Context) error {
		r, err := c.c.COSI.Get(ctx, resource.NewMetadata(k8s.ControlPlaneNamespaceName, typ, k8s.FinalPrefix+component, resource.VersionUndefined))
		if state.IsNotFoundError(err) {
			r, err = c.c.COSI.Get(ctx, resource.NewMetadata(k8s.ControlPlaneNamespaceName, typ, component, resource.VersionUndefined))
		}
		if err != nil {
			return err
		}
		v = r.Metadata().Version().Value()
		return nil
	})
	return v, err
}

// Manifests returns node's bootstrap manifests, every object of every
// Manifests.kubernetes.talos.dev resource in namespace controlplane (what
// go-kubernetes' manifests.GetBootstrapManifests reads, day2.md §1.2 step
// 10), as unstructured objects in resource-id order, each resource's in
// its own order. Talos only creates missing bootstrap objects: applying
// these is how an upgrade updates kube-proxy and CoreDNS. Ask a control
// plane; a worker has none.
func (c *Client) Manifests(ctx context.Context, node string) ([]map[string]any, error) {
	var out []map[string]any
	err := c.read(ctx, "List Manifests", node, func(ctx context.Context) error {
		list, err := safe.StateList[*k8s.Manifest](ctx, c.c.COSI, resource.NewMetadata(k8s.ControlPlaneNamespaceName, k8s.ManifestType, "", resource.VersionUndefined))
		if err != nil {
			return err
		}
		ms := slices.SortedFunc(list.All(), func(a, b *k8s.Manifest) int { return strings.Compare(a.Metadata().ID(), b.Metadata().ID()) })
		out = out[:0]
		for _, m := range ms {
			for _, item := range m.TypedSpec().Items {
				out = append(out, item.Object)
			}
		}
		return nil
	})
	return out, err
}
