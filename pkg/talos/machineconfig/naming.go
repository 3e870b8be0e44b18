package machineconfig

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/talosc/talosc/pkg/config"
)

// Link aliases the generated configs give the NICs (LinkAliasConfig names).
const (
	// LinkPrivate is the cluster NIC (NIC 0).
	LinkPrivate = "private"
	// LinkExternal is the routed external NIC (NIC 1, Proxmox).
	LinkExternal = "external"
	// linkOpenStackFallback is the OpenStack NIC when its MAC is unknown:
	// cloud platforms boot with net.ifnames=0 and a server has one port.
	linkOpenStackFallback = "eth0"
)

// MAC is the deterministic MAC address of a machine's NIC (reference §5.1):
// 02: followed by the first five bytes of sha256("<cluster>/<hostname>/<nic>"),
// NIC 0 the cluster NIC and NIC 1 the external NIC. The 02 prefix marks a
// locally administered unicast address.
func MAC(cluster, hostname string, nic int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d", cluster, hostname, nic))
	hw := net.HardwareAddr{0x02, sum[0], sum[1], sum[2], sum[3], sum[4]}
	return hw.String()
}

// Anchor is a machine's link-local anchor address on the external link
// (reference §5.1): the first four bytes of sha256("<cluster>/<hostname>"),
// as a big-endian number, modulo the usable hosts of anchor_cidr (network
// and broadcast addresses skipped), as a /32.
func Anchor(cluster, hostname string, anchorCIDR netip.Prefix) (netip.Prefix, error) {
	p := anchorCIDR.Masked()
	if !p.IsValid() || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("network.external.anchor_cidr %q is not an IPv4 network", anchorCIDR)
	}
	size := uint64(1) << (32 - p.Bits())
	first, hosts := uint64(1), size-2
	if size <= 2 { // /31 and /32 have no network or broadcast address
		first, hosts = 0, size
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s", cluster, hostname))
	offset := first + uint64(binary.BigEndian.Uint32(sum[:4]))%hosts
	base := p.Addr().As4()
	n := uint64(binary.BigEndian.Uint32(base[:])) + offset
	var out [4]byte
	binary.BigEndian.PutUint32(out[:], uint32(n)) // n stays inside the network
	return netip.PrefixFrom(netip.AddrFrom4(out), 32), nil
}

// anchorFor returns hostname's anchor and refuses one that collides with
// another desired machine's (the reference aborts on a collision).
func anchorFor(cfg *config.Cluster, hostname string) (netip.Prefix, error) {
	ext := cfg.Network.External
	mine, err := Anchor(cfg.Name, hostname, ext.AnchorCIDR)
	if err != nil {
		return netip.Prefix{}, err
	}
	for _, m := range cfg.Hostnames() {
		if m.Hostname == hostname {
			continue
		}
		other, err := Anchor(cfg.Name, m.Hostname, ext.AnchorCIDR)
		if err != nil {
			return netip.Prefix{}, err
		}
		if other == mine {
			return netip.Prefix{}, fmt.Errorf("link-local anchors of %s and %s collide (%s in network.external.anchor_cidr %s); use a larger anchor_cidr (/20 or wider)",
				hostname, m.Hostname, mine.Addr(), ext.AnchorCIDR)
		}
	}
	return mine, nil
}
