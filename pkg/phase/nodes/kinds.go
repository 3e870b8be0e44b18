package nodes

import "github.com/talosc/talosc/pkg/phase/nodes/kubeupgrade"

// Plan kinds of the changes the nodes phase records itself (the provider
// records its own: "openstack:server", "proxmox:vm").
const (
	// KindMachineConfig is a change to a node's machine configuration.
	KindMachineConfig = "talos:machineconfig"
	// KindTalosNode is a node's Talos installation (a graceful reset
	// deletes it).
	KindTalosNode = "talos:node"
	// KindKubeNode is a Kubernetes Node object (drained, uncordoned,
	// deleted).
	KindKubeNode = "kube:node"
	// KindEtcdMember is an etcd member removed by id.
	KindEtcdMember = "etcd:member"

	// The changes of a Kubernetes upgrade step, one kind per component so
	// that the plan lists them in the order converge makes them: the
	// step's images pulled, each control plane's static pods, kube-proxy's
	// image in the control planes' configurations, every kubelet, and the
	// bootstrap manifests.
	KindKubeImages            = kubeupgrade.KindImages
	KindKubeAPIServer         = kubeupgrade.KindAPIServer
	KindKubeControllerManager = kubeupgrade.KindControllerManager
	KindKubeScheduler         = kubeupgrade.KindScheduler
	KindKubeProxy             = kubeupgrade.KindProxy
	KindKubelet               = kubeupgrade.KindKubelet
	KindKubeManifests         = kubeupgrade.KindManifests

	kindIdentity  = "talos:identity"
	kindBootstrap = "talos:bootstrap"
	kindFile      = "file"
)
