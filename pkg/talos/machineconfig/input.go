package machineconfig

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"

	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/naming"
)

// Input is what every node's configuration of one cluster is generated from.
type Input struct {
	// Cluster is the loaded, validated cluster.yaml.
	Cluster *config.Cluster
	// Secrets is the cluster identity (talossecrets.yaml).
	Secrets *secrets.Bundle
	// DiskEncryptionPassphrase is talossecrets.yaml's diskEncryptionPassphrase.
	// Empty for clusters created without it: they never get disk encryption
	// (Talos refuses an EPHEMERAL encryption mismatch on a running node).
	DiskEncryptionPassphrase config.Secret
	// AdvertisedAddress is the Kubernetes API address clients use: the
	// cluster endpoint is https://<AdvertisedAddress>:6443 (OpenStack: the
	// kubeapi floating IP; Proxmox: the VIP). It is a certificate SAN.
	AdvertisedAddress string
	// VIP is the Layer 2 API VIP the control planes share (OpenStack: the
	// kubeapi port's fixed IP; Proxmox: network.{cluster,external}.kubeapi_vip).
	// It is a certificate SAN. Proxmox falls back to cluster.yaml's VIP.
	VIP netip.Addr
	// ExtraSANs are additional certificate SANs (after the advertised
	// address and the VIP; duplicates are dropped).
	ExtraSANs []string
	// Installers maps every pool ("controlplane" and each worker pool) to
	// its installer image reference (see factory.Installers).
	Installers map[string]string
	// OpenStackProject is the OpenStack credential's project name, when
	// known; it becomes the ncsa/project node label.
	OpenStackProject string
	// Contribute overrides the provider contribution (tests, future
	// providers). Nil selects OpenStackContribution or ProxmoxContribution
	// from the cluster's provider.
	Contribute func(in *Input, n Node) (Contribution, error)
}

// Node is one machine to generate a configuration for.
type Node struct {
	// Machine is the desired machine (hostname, role, pool, index).
	Machine config.Machine
	// TalosVersion selects the config contract: the version the node RUNS
	// for an existing node, the target talos.version for a new one.
	TalosVersion string
	// KubernetesVersion is baked into the config: the running version for
	// an existing node, the target for a new one (see KubernetesVersion).
	KubernetesVersion string
	// Images override the Kubernetes component images KubernetesVersion
	// gives, one by one: mid Kubernetes upgrade, each as the node runs it
	// (see RunningImages). The zero value keeps every default.
	Images KubernetesImages
	// Address is the node's static cluster address with the L2 prefix, when
	// the provider assigns one (Proxmox managed SDN). The zero value means
	// DHCP, or, with managed SDN, the address the static layout gives.
	Address netip.Prefix
	// MACs are the node's NIC MAC addresses: [0] the cluster NIC, [1] the
	// external NIC. Empty entries default to MAC (Proxmox); OpenStack
	// without a MAC falls back to the link name eth0.
	MACs []string
}

// Contribution is what a provider adds to a node's configuration.
type Contribution struct {
	// InstallDisk is the disk Talos installs to (/dev/vda, /dev/sda).
	InstallDisk string
	// Platform is the installer platform (openstack, nocloud, metal).
	Platform string
	// Labels are the provider's default node labels (ncsa/project); cluster
	// and pool tags override them.
	Labels map[string]string
	// Patches are applied after the generated stack and before the user's
	// config_patches, in order.
	Patches []NamedPatch
	// MaxUserData is the largest base64-encoded config the provider can
	// deliver (Nova's user_data limit); 0 means no limit.
	MaxUserData int
}

// NamedPatch is one strategic-merge machine-config patch (YAML, possibly
// several documents) with a name for errors and plans.
type NamedPatch struct {
	// Name matches ^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$ for generated and
	// provider patches; user patches are named after their cluster.yaml key.
	Name string
	// YAML is the patch text.
	YAML string
}

// patchNamePattern is the reference's rule for provider patch names (they
// became temporary file names there).
func patchNamePattern() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)
}

// check refuses an incomplete Input before anything is generated.
func (in *Input) check() error {
	var errs []error
	if in.Cluster == nil {
		errs = append(errs, errors.New("no cluster configuration"))
	}
	if in.Secrets == nil {
		errs = append(errs, errors.New("no cluster secrets (talossecrets.yaml)"))
	}
	if in.AdvertisedAddress == "" {
		errs = append(errs, errors.New("no advertised kubernetes API address (the network phase reports it)"))
	}
	return errors.Join(errs...)
}

// checkNode refuses a node the cluster does not describe.
func (in *Input) checkNode(n Node) (config.Pool, error) {
	m := n.Machine
	if m.Hostname == "" {
		return config.Pool{}, errors.New("node has no hostname")
	}
	var pool config.Pool
	switch m.Role {
	case config.RoleControlPlane:
		pool = in.Cluster.ControlPlane
		if m.Pool != config.RoleControlPlane {
			return config.Pool{}, fmt.Errorf("control plane %s is in pool %q, not %q", m.Hostname, m.Pool, config.RoleControlPlane)
		}
	case config.RoleWorker:
		p, ok := in.Cluster.Workers.Lookup(m.Pool)
		if !ok {
			return config.Pool{}, fmt.Errorf("worker %s is in pool %q, which cluster.yaml does not define", m.Hostname, m.Pool)
		}
		pool = p
	default:
		return config.Pool{}, fmt.Errorf("node %s has role %q, want %s or %s", m.Hostname, m.Role, config.RoleControlPlane, config.RoleWorker)
	}
	if in.Installers[m.Pool] == "" {
		return config.Pool{}, fmt.Errorf("no installer image for pool %q (factory.Installers resolves one per pool)", m.Pool)
	}
	return pool, nil
}

// controlPlane reports whether the node is a control plane.
func (n Node) controlPlane() bool { return n.Machine.Role == config.RoleControlPlane }

// mac returns the MAC of NIC index i in Talos's lowercase form: the
// caller's, else the deterministic one (naming.MAC).
func (n Node) mac(cluster string, i int) (string, error) {
	if i >= len(n.MACs) || n.MACs[i] == "" {
		return naming.MAC(cluster, n.Machine.Hostname, i), nil
	}
	hw, err := net.ParseMAC(n.MACs[i])
	if err != nil || len(hw) != 6 {
		return "", fmt.Errorf("node %s: NIC %d MAC %q is not a MAC address like 02:aa:bb:cc:dd:ee", n.Machine.Hostname, i, n.MACs[i])
	}
	return hw.String(), nil
}
