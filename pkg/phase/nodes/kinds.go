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

	kindIdentity  = "talos:identity"
	kindBootstrap = "talos:bootstrap"
	kindFile      = "file"
)
