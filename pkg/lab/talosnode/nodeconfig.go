package talosnode

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"strings"

	"github.com/siderolabs/crypto/x509"
	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
)

// machineConfig is what a simulated node reads from its machine
// configuration, parsed once with machinery's configloader.
type machineConfig struct {
	raw      []byte
	provider talosconfig.Provider

	clusterID     string
	clusterSecret string
	clusterName   string
	endpoint      *url.URL
	machineType   machine.Type
	hostname      string
	installer     Image
	osCA          *x509.PEMEncodedCertificateAndKey
	acceptedCAs   [][]byte
	certSANs      []string
	kubeletImage  string
	labels        map[string]string
	taints        map[string]string
	// vips are the virtual IPs the node may hold (Layer2VIPConfig).
	vips []netip.Addr
	// addresses are the static addresses of its links (LinkConfig).
	addresses []netip.Prefix
}

// parseMachineConfig loads a machine configuration as a node receives it
// (user_data, the cidata ISO, ApplyConfiguration).
func parseMachineConfig(data []byte) (*machineConfig, error) {
	p, err := configloader.NewFromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("load machine config: %w", err)
	}
	mc := &machineConfig{raw: data, provider: p}
	if p.RawV1Alpha1() == nil || p.Machine() == nil {
		return nil, errors.New("machine config has no v1alpha1 document (a node needs machine.type, machine.ca)")
	}
	mc.machineType = p.Machine().Type()
	sec := p.Machine().Security()
	if sec == nil || sec.IssuingCA() == nil || len(sec.IssuingCA().Crt) == 0 {
		return nil, errors.New("machine config has no machine.ca: apid could not serve")
	}
	mc.osCA = sec.IssuingCA()
	mc.acceptedCAs = append(mc.acceptedCAs, sec.IssuingCA().Crt)
	for _, ca := range sec.AcceptedCAs() {
		mc.acceptedCAs = append(mc.acceptedCAs, ca.Crt)
	}
	mc.certSANs = sec.CertSANs()
	if id := p.DiscoveryIdentityConfig(); id != nil {
		mc.clusterID, mc.clusterSecret = id.ClusterID(), id.ClusterSecret()
	}
	if mc.clusterID == "" {
		return nil, errors.New("machine config has no cluster identity (cluster.id / DiscoveryIdentityConfig)")
	}
	if kc := p.K8sClusterConfig(); kc != nil {
		mc.clusterName, mc.endpoint = kc.ClusterName(), kc.ClusterEndpoint()
	}
	if mc.endpoint == nil || mc.endpoint.Host == "" {
		return nil, errors.New("machine config has no cluster endpoint")
	}
	if h := p.NetworkHostnameConfig(); h != nil {
		mc.hostname = h.Hostname()
	}
	img, err := ParseImage(installerImage(p))
	if err != nil {
		return nil, fmt.Errorf("machine config: %w", err)
	}
	mc.installer = img
	if k := p.K8sKubeletConfig(); k != nil {
		mc.kubeletImage = k.Image()
	}
	if n := p.K8sNodeConfig(); n != nil {
		mc.labels, mc.taints = maps.Clone(n.Labels()), maps.Clone(n.Taints())
	}
	for _, v := range p.NetworkVirtualIPConfigs() {
		mc.vips = append(mc.vips, v.VIP())
	}
	for _, l := range p.NetworkCommonLinkConfigs() {
		for _, a := range l.Addresses() {
			mc.addresses = append(mc.addresses, a.Address())
		}
	}
	return mc, nil
}

// StaticAddresses returns the static link addresses (LinkConfig documents)
// of a machine configuration as a node would receive it: where a platform
// that leaves addressing to the machine config (a Proxmox bridge without
// DHCP) finds the node. None means the node asks DHCP.
func StaticAddresses(config []byte) ([]netip.Prefix, error) {
	mc, err := parseMachineConfig(config)
	if err != nil {
		return nil, err
	}
	return mc.addresses, nil
}

// installerImage is the install image: the UnattendedInstallConfig
// document (contract 1.14) or machine.install.image.
func installerImage(p talosconfig.Provider) string {
	if u := p.UnattendedInstallConfig(); u != nil && u.InstallerImage() != "" {
		return u.InstallerImage()
	}
	if in := p.Machine().Install(); in != nil {
		return in.Image()
	}
	return ""
}

// controlPlane reports whether the config is a control plane's.
func (mc *machineConfig) controlPlane() bool {
	return mc.machineType.IsControlPlane()
}

// imageTag is an image reference's tag ("v1.36.1"), "" without one.
func imageTag(ref string) string {
	name, _, _ := strings.Cut(ref, "@")
	_, tag, _ := cutTag(name)
	return tag
}

// kubernetesCA is the Kubernetes API server CA (certificate and key) the
// Kubeconfig RPC signs admin certificates with.
func (mc *machineConfig) kubernetesCA() (*x509.PEMEncodedCertificateAndKey, [][]byte, error) {
	ca := mc.provider.K8sAPIServerCAConfig()
	if ca == nil || ca.IssuingCA() == nil || len(ca.IssuingCA().Key) == 0 {
		return nil, nil, errors.New("k8s API server CA config is not set")
	}
	accepted := [][]byte{}
	for _, c := range ca.AcceptedCAs() {
		accepted = append(accepted, c.Crt)
	}
	if len(accepted) == 0 {
		accepted = append(accepted, ca.IssuingCA().Crt)
	}
	return ca.IssuingCA(), accepted, nil
}

// clusterKey identifies the Talos cluster the config belongs to.
func (mc *machineConfig) clusterKey() string {
	return mc.clusterID + "/" + mc.clusterSecret
}

// redactedName is the config's identity for errors.
func (mc *machineConfig) String() string {
	return fmt.Sprintf("%s %s of cluster %s", strings.ToLower(mc.machineType.String()), mc.hostname, mc.clusterName)
}
