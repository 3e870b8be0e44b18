package nodes

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
	KindKubeImages            = "kube:images"
	KindKubeAPIServer         = "kube:apiserver"
	KindKubeControllerManager = "kube:controller-manager"
	KindKubeScheduler         = "kube:scheduler"
	KindKubeProxy             = "kube:proxy"
	KindKubelet               = "kube:kubelet"
	KindKubeManifests         = "kube:manifests"

	kindIdentity  = "talos:identity"
	kindBootstrap = "talos:bootstrap"
	kindFile      = "file"
)
