// Package naming derives a machine's deterministic network identities from
// its cluster and hostname (reference §5.1): the MAC address of each NIC
// and the link-local anchor on the external link. The providers that create
// the NICs and the machine configs that match them must agree on these, so
// they live here, with no Talos machinery behind them: importing naming
// costs a provider nothing of the config generator.
package naming

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
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
