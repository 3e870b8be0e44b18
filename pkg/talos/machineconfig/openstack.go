package machineconfig

import (
	"errors"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// Install disks of the providers' VMs.
const (
	// DiskOpenStack is the virtio boot volume of an OpenStack server.
	DiskOpenStack = "/dev/vda"
	// DiskProxmox is the virtio-scsi disk of a Proxmox VM.
	DiskProxmox = "/dev/sda"
)

// NovaUserDataLimit is the largest user_data Nova accepts, in bytes after
// base64 encoding (its database column holds 65535).
const NovaUserDataLimit = 65535

// PatchOpenStackNetwork is the name of the OpenStack network patch.
const PatchOpenStackNetwork = "openstack-network"

// OpenStackContribution is the OpenStack part of node n's configuration
// (reference §5.2): install disk /dev/vda, the openstack installer
// platform, the ncsa/project label when known, and the network: DHCP on the
// cluster link, its jumbo MTU with the default route clamped through the
// subnet's first host, and the Layer 2 API VIP (the kubeapi port's fixed IP)
// on control planes. The link is aliased "private" by its port's MAC; a
// node whose MAC is not known yet uses eth0 (one port per server, and cloud
// platforms boot with net.ifnames=0).
func OpenStackContribution(in *Input, n Node) (Contribution, error) {
	cfg := in.Cluster
	link := linkOpenStackFallback
	var docs []any
	if len(n.MACs) > 0 && n.MACs[0] != "" {
		mac, err := n.mac(cfg.Name, 0)
		if err != nil {
			return Contribution{}, err
		}
		link = LinkPrivate
		docs = append(docs, aliasDoc(LinkPrivate, mac))
	}
	docs = append(docs, dhcpDoc(link))
	if j := jumboLink(link, cfg.Network.Cluster.MTU, firstHost(cfg.Network.Cluster.CIDR)); j != nil {
		docs = append(docs, *j)
	}
	if n.controlPlane() {
		if !in.VIP.IsValid() {
			return Contribution{}, errors.New("openstack: no API VIP for the control planes (the kubeapi port's fixed IP, reported by the network phase)")
		}
		docs = append(docs, vipDoc(in.VIP, link))
	}
	p, err := patch(PatchOpenStackNetwork, docs...)
	if err != nil {
		return Contribution{}, err
	}
	var labels map[string]string
	if in.OpenStackProject != "" {
		labels = map[string]string{LabelProject: in.OpenStackProject}
	}
	return Contribution{
		InstallDisk: DiskOpenStack,
		Platform:    factory.PlatformOpenStack,
		Labels:      labels,
		Patches:     []NamedPatch{p},
		MaxUserData: NovaUserDataLimit,
	}, nil
}

// contribution returns the provider's contribution to n.
func (in *Input) contribution(n Node) (Contribution, error) {
	if in.Contribute != nil {
		return in.Contribute(in, n)
	}
	switch in.Cluster.Provider() {
	case config.ProviderOpenStack:
		return OpenStackContribution(in, n)
	case config.ProviderProxmox:
		return ProxmoxContribution(in, n)
	}
	return Contribution{}, errors.New("cluster.yaml has no provider section (openstack or proxmox)")
}
