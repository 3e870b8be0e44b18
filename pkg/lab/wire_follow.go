package lab

import (
	"context"
	"net/netip"

	"github.com/talosc/talosc/pkg/lab/follow"
)

// startFollow follows the real OpenStack of Options.Follow: no simulated
// OpenStack runs.
func (l *Lab) startFollow(o follow.Options) error {
	f, err := follow.New(l.ctx, followHost{l}, o, l.logf)
	if err != nil {
		return err
	}
	l.Follower = f
	ctx, cancel := context.WithCancel(l.ctx)
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	l.add(Endpoint{Name: "openstack (followed)", URL: o.Auth.IdentityEndpoint}, func() error {
		cancel()
		<-done
		return nil
	})
	return nil
}

// followHost lets a follow.Follower drive the lab's nodes and NAT.
type followHost struct{ l *Lab }

func (h followHost) BootServer(name string, addr netip.Addr, userData []byte) error {
	return h.l.bootServer(name, addr, userData)
}

func (h followHost) DestroyNode(addr netip.Addr) { h.l.destroyNode(addr) }

func (h followHost) Forward(fip, fixed netip.Addr) error { return h.l.forwardFloatingIP(fip, fixed) }

func (h followHost) Unforward(fip netip.Addr) { h.l.nat.Remove(fip) }
