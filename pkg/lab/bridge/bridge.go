// Package bridge models the lab Proxmox's bridge vmbr0: the address of
// every started VM, static from its machine config or leased by the
// bridge's DHCP, from .11 up in the bridge subnet.
package bridge

import (
	"fmt"
	"net/netip"
	"sync"
)

// Bridge is the lab's vmbr0: the address of every started VM, static (from
// its machine config) or leased by the bridge's DHCP from the bridge subnet.
type Bridge struct {
	mu     sync.Mutex
	prefix netip.Prefix
	addrs  map[int]netip.Prefix // by VMID
}

// Attach returns the address of VM vmid: static when valid (unless another
// VM has it), else its lease (a new one on first use).
func (b *Bridge) Attach(vmid int, static netip.Prefix) (netip.Prefix, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	used := map[netip.Addr]int{}
	for id, a := range b.addrs {
		if id != vmid {
			used[a.Addr()] = id
		}
	}
	if static.IsValid() {
		if id, taken := used[static.Addr()]; taken {
			return netip.Prefix{}, fmt.Errorf("static address %s is VM %d's", static.Addr(), id)
		}
		b.addrs[vmid] = static
		return static, nil
	}
	if a, ok := b.addrs[vmid]; ok && b.prefix.Contains(a.Addr()) {
		return a, nil
	}
	a := b.prefix.Addr()
	for range 11 { // leases start at .11
		a = a.Next()
	}
	for ; b.prefix.Contains(a); a = a.Next() {
		if _, taken := used[a]; !taken {
			b.addrs[vmid] = netip.PrefixFrom(a, b.prefix.Bits())
			return b.addrs[vmid], nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("dhcp: %s is exhausted", b.prefix)
}

// Address is VM vmid's address.
func (b *Bridge) Address(vmid int) (netip.Addr, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.addrs[vmid]
	return a.Addr(), ok
}

// Release forgets VM vmid and returns its address.
func (b *Bridge) Release(vmid int) (netip.Addr, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.addrs[vmid]
	delete(b.addrs, vmid)
	return a.Addr(), ok
}

// New returns a bridge leasing addresses from prefix.
func New(prefix netip.Prefix) *Bridge {
	return &Bridge{prefix: prefix, addrs: map[int]netip.Prefix{}}
}

// Prefix is the bridge subnet.
func (b *Bridge) Prefix() netip.Prefix { return b.prefix }
