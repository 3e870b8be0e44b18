package lab_test

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosc/talosc/pkg/lab"
)

// TestAPIVIPFailsOver: the API VIP of a cluster of three control planes is
// owned by one of them; when its server is deleted the VIP moves to another
// and the API answers again; with every control plane down it refuses
// connections; the first control plane back takes the VIP.
func TestAPIVIPFailsOver(t *testing.T) {
	t.Parallel()
	needKubeAPIServer(t)
	ctx := t.Context()
	l, err := lab.Start(ctx, lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond, VIPFailover: 100 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	c := newOSCluster(t, l, "127.16.78.0/24", 3, 0)
	serverIDs := map[netip.Addr]string{}
	var cps []netip.Addr
	for _, m := range c.cfg.Hostnames() {
		id, addr := c.boot(m)
		a := netip.MustParseAddr(addr)
		serverIDs[a] = id
		cps = append(cps, a)
	}
	tc, nctx := c.talos(cps[0].String())
	bootstrap(t, tc, nctx)
	cs := kubeClient(t, tc, nctx)
	api := func() error {
		_, err := cs.Discovery().ServerVersion()
		return err
	}
	owner := func() netip.Addr {
		for _, v := range l.Status().VIPs {
			if v.Cluster == c.cfg.Name && v.Address.String() == c.vip {
				return v.Owner
			}
		}
		return netip.Addr{}
	}
	ownedBy := func(want func(netip.Addr) bool) func() error {
		return func() error {
			if o := owner(); !want(o) {
				return fmt.Errorf("VIP owner %v; status %+v", o, l.Status().VIPs)
			}
			return api()
		}
	}

	eventually(t, "the API answers on the VIP", 3*time.Minute, ownedBy(func(o netip.Addr) bool { return slices.Contains(cps, o) }))
	first := owner()
	if err := servers.Delete(ctx, c.compute, serverIDs[first]).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the API answers through another owner", 20*time.Second, ownedBy(func(o netip.Addr) bool { return o.IsValid() && o != first }))

	for _, a := range cps {
		if n, ok := l.Fleet().Node(a); ok {
			n.PowerOff()
		}
	}
	eventually(t, "the API refuses with every control plane down", 10*time.Second, func() error {
		if o := owner(); o.IsValid() {
			return fmt.Errorf("VIP still owned by %s", o)
		}
		if err := api(); !errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("API call: %w, want connection refused", err)
		}
		return nil
	})

	back := cps[slices.IndexFunc(cps, func(a netip.Addr) bool { return a != first })]
	n, _ := l.Fleet().Node(back)
	n.PowerOn()
	eventually(t, "the first control plane back takes the VIP", 20*time.Second, ownedBy(func(o netip.Addr) bool { return o == back }))
}

// TestAPIVIPMoves: a VIP moved in the control planes' configurations, one
// control plane at a time, moves on the network as Talos's VIP controller
// moves it: the new address answers as soon as the first control plane
// carrying it is up (with a serving certificate for it), the old one keeps
// answering while any control plane still carries it, and refuses once
// none does.
func TestAPIVIPMoves(t *testing.T) {
	t.Parallel()
	needKubeAPIServer(t)
	l, err := lab.Start(t.Context(), lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond, VIPFailover: 100 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	c := newOSCluster(t, l, "127.16.83.0/24", 3, 0)
	b := c.build(l)
	d := &day2{t: t, b: b}
	oldVIP, newVIP := netip.MustParseAddr(c.vip), netip.MustParseAddr("127.16.83.250")
	oldAPI := b.kube
	tc, nctx := c.talos(b.controlPlanes[0].String())
	kubeconfig, err := tc.Kubeconfig(nctx)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.Host, rc.Timeout = "https://"+net.JoinHostPort(newVIP.String(), "6443"), 2*time.Second
	newAPI := kubernetes.NewForConfigOrDie(rc)
	answers := func(cs kubernetes.Interface) error {
		_, err := cs.Discovery().ServerVersion()
		return err
	}
	refuses := func(cs kubernetes.Interface) func() error {
		return func() error {
			if err := answers(cs); !errors.Is(err, syscall.ECONNREFUSED) {
				return fmt.Errorf("API call: %w, want connection refused", err)
			}
			return nil
		}
	}
	vips := func(want ...netip.Addr) func() error {
		return func() error {
			var got []netip.Addr
			for _, v := range l.Status().VIPs {
				if v.Cluster == c.cfg.Name && v.Owner.IsValid() {
					got = append(got, v.Address)
				}
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("owned VIPs %v, want %v (status %+v)", got, want, l.Status().VIPs)
			}
			return nil
		}
	}
	eventually(t, "the new address refuses before any control plane carries it", 10*time.Second, refuses(newAPI))

	move := fmt.Sprintf("apiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: %s\n$patch: delete\n---\napiVersion: v1alpha1\nkind: Layer2VIPConfig\nname: %s\nlink: private\n", oldVIP, newVIP)
	for i, cp := range b.controlPlanes {
		d.apply(b.host(cp), move, machine.ApplyConfigurationRequest_NO_REBOOT)
		if i < len(b.controlPlanes)-1 {
			eventually(t, "both addresses answer while control planes carry each", 10*time.Second, func() error {
				return errors.Join(vips(oldVIP, newVIP)(), answers(oldAPI), answers(newAPI))
			})
		}
	}
	eventually(t, "only the new address answers once no control plane carries the old", 10*time.Second, func() error {
		return errors.Join(vips(newVIP)(), refuses(oldAPI)(), answers(newAPI))
	})
}
