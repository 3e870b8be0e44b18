package openstack

import (
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/talosc/talosc/pkg/config"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
)

// Nova binds a server's port while the server builds (nova-compute), not
// in its POST: right after a create, the port of a machine with two
// servers may be bound to neither. portHolder reads it again until it is.
func TestPortHolder_WaitsForNovaToBindThePort(t *testing.T) {
	t.Parallel()
	lab, err := labos.Start(t.Context(), labos.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Close() })
	cred, err := lab.CreateApplicationCredential("demo", "talosc-internal")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Connect(t.Context(), &config.Cluster{Name: "c", OpenStack: &config.OpenStack{
		URL: lab.AuthURL(), AllowHTTP: true, Region: lab.Region(), CredentialID: config.Secret(cred.ID), CredentialSecret: config.Secret(cred.Secret),
	}}, Options{RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	n, err := networks.Create(t.Context(), c.network, networks.CreateOpts{Name: "c-net"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	sn, err := subnets.Create(t.Context(), c.network, subnets.CreateOpts{NetworkID: n.ID, CIDR: "127.16.0.0/24", IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	p, err := ports.Create(t.Context(), c.network, ports.CreateOpts{NetworkID: n.ID, Name: "c-worker-01", FixedIPs: []ports.IP{{SubnetID: sn.ID}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	found := []servers.Server{{ID: "built-first"}, {ID: "bound-later"}}
	bound := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		device := "bound-later"
		bound <- ports.Update(t.Context(), c.network, p.ID, ports.UpdateOpts{DeviceID: &device}).Err
	}()
	used, err := c.portHolder(t.Context(), p.ID, found)
	if err := <-bound; err != nil {
		t.Fatal(err)
	}
	if err != nil || !slices.Equal(used, []bool{false, true}) {
		t.Fatalf("portHolder = %v, %v; want only the server the port was bound to a second later in use", used, err)
	}
}
