package talosnode

import (
	"context"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/resource/meta"
	"github.com/siderolabs/talos/pkg/machinery/resources/cluster"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"github.com/siderolabs/talos/pkg/machinery/resources/v1alpha1"
)

// servedType is a resource type a node serves and the Talos version that
// brought it.
type servedType struct {
	def meta.ResourceDefinitionProvider
	// since114: only Talos ≥ 1.14 has it.
	since114 bool
}

// servedTypes are the resource types a node serves, defined by machinery's
// own resource definitions (aliases, print columns, sensitivity), plus the
// COSI meta types every Talos registers first. A new resource kind the lab
// serves is added here so talosctl can resolve it.
func servedTypes() []servedType {
	return []servedType{
		{def: &meta.ResourceDefinition{}},
		{def: &meta.Namespace{}},
		{def: &configres.MachineConfig{}},
		{def: &cluster.Member{}},
		{def: &runtime.ExtensionStatus{}},
		{def: &runtime.MachineStatus{}},
		{def: &runtime.ImageFactorySchematic{}, since114: true},
		{def: &runtime.BootID{}, since114: true},
		{def: &v1alpha1.Service{}},
		{def: &k8s.KubeletSpec{}},
		{def: &k8s.APIServerConfig{}},
		{def: &k8s.ControllerManagerConfig{}},
		{def: &k8s.SchedulerConfig{}},
		{def: &k8s.StaticPod{}},
		{def: &k8s.StaticPodStatus{}},
		{def: &k8s.Manifest{}},
	}
}

// servedNamespaces are the namespaces of the served types, described as
// machined describes them.
func servedNamespaces() map[resource.Namespace]string {
	return map[resource.Namespace]string{
		meta.NamespaceName:            "Metadata namespace which contains resource and namespace definitions.",
		configres.NamespaceName:       "Talos node configuration.",
		cluster.NamespaceName:         "Cluster configuration and discovery resources.",
		runtime.NamespaceName:         "Talos v1alpha1 subsystems glue resources.",
		k8s.NamespaceName:             "Kubernetes all node types resources.",
		k8s.ControlPlaneNamespaceName: "Kubernetes control plane resources.",
	}
}

// syncDefinitions publishes the ResourceDefinitions and Namespaces of the
// "meta" namespace for the Talos version the node runs, which is how
// talosctl resolves "get members" to Members.cluster.talos.dev.
func (n *Node) syncDefinitions(ctx context.Context, v resourceView) {
	var defs []*meta.ResourceDefinition
	for _, t := range servedTypes() {
		if t.since114 && !atLeast114(v.image.Version) {
			continue
		}
		rd, err := meta.NewResourceDefinition(t.def.ResourceDefinition())
		if err != nil {
			panic(err) // machinery's own definitions are valid
		}
		defs = append(defs, rd)
	}
	syncKind(ctx, n.st, meta.NamespaceName, meta.ResourceDefinitionType, defs)
	namespaces := make([]*meta.Namespace, 0, len(servedNamespaces()))
	for ns, description := range servedNamespaces() {
		namespaces = append(namespaces, meta.NewNamespace(ns, meta.NamespaceSpec{Description: description}))
	}
	syncKind(ctx, n.st, meta.NamespaceName, meta.NamespaceType, namespaces)
}

// sensitive reports the served resource types whose definition is
// meta.Sensitive: only os:admin may read them.
func sensitive(typ resource.Type) bool {
	for _, t := range servedTypes() {
		if d := t.def.ResourceDefinition(); d.Type == typ {
			return d.Sensitivity == meta.Sensitive
		}
	}
	return false
}
