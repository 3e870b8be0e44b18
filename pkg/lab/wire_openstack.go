package lab

import (
	"bytes"
	"cmp"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/ulikunitz/xz"

	"github.com/talosc/talosc/pkg/lab/imagefactory"
	"github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// startOpenStack runs the simulated OpenStack and boots a Talos node for
// every server that becomes ACTIVE, from its user_data, on its port's fixed
// address; floating IPs are served as NAT would.
func (l *Lab) startOpenStack() error {
	cloud, err := openstack.Start(l.ctx, openstack.Config{
		BootDelay:    50 * time.Millisecond,
		DeleteDelay:  50 * time.Millisecond,
		OnEvent:      l.onOpenStack,
		Injector:     l.inj,
		Recorder:     l.rec,
		ExternalCIDR: l.opts.ExternalCIDR,
	})
	if err != nil {
		return err
	}
	l.OpenStack = cloud
	l.add(Endpoint{Name: "openstack", URL: cloud.AuthURL()}, cloud.Close)
	return nil
}

func (l *Lab) onOpenStack(ev openstack.Event) {
	switch ev.Kind {
	case openstack.ServerActive:
		addr, ok := serverAddress(ev)
		if !ok {
			l.logf("openstack: server %s has no loopback fixed address; no Talos node boots", ev.Server.Name)
			return
		}
		_ = l.bootServer(ev.Server.Name, addr, ev.UserData, l.serverDisk(ev.Server)...)
	case openstack.ServerDeleted, openstack.ServerError:
		if addr, ok := serverAddress(ev); ok {
			l.destroyNode(addr)
		}
	case openstack.FloatingIPAssociated:
		fip, err1 := netip.ParseAddr(ev.FloatingIP.FloatingIPAddress)
		fixed, err2 := netip.ParseAddr(ev.FloatingIP.FixedIPAddress)
		if err1 != nil || err2 != nil {
			return
		}
		_ = l.forwardFloatingIP(fip, fixed)
	case openstack.FloatingIPReleased:
		if fip, err := netip.ParseAddr(ev.FloatingIP.FloatingIPAddress); err == nil {
			l.nat.Remove(fip)
		}
	}
}

// bootServer boots the Talos node of an ACTIVE server on addr from its
// user_data; both the simulated OpenStack and a followed real one use it
// (a followed server's disk is not known: its node runs its config's
// installer).
func (l *Lab) bootServer(name string, addr netip.Addr, userData []byte, disk ...talosnode.VMOption) error {
	if err := l.nodeKnobs.boot(addr, userData, disk...); err != nil {
		l.logf("openstack: boot %s on %s: %v", name, addr, err)
		return err
	}
	return nil
}

// openStackArtifact is the Image Factory artifact an OpenStack boot image
// is made from.
const openStackArtifact = "openstack-amd64.raw.xz"

// serverDisk is the Talos a server boots from: the Image Factory artifact
// its Glance image (or its boot volume's) holds, recognised by the image's
// sha512 (of the artifact as served, or decompressed as talosc uploads
// it) among the lab factory's schematics and versions. None for an image
// the lab's factory did not make: the node then runs its config's
// installer.
func (l *Lab) serverDisk(srv *openstack.Server) []talosnode.VMOption {
	inv := l.OpenStack.Inventory()
	imageID := srv.ImageID
	for _, v := range inv.Volumes {
		if imageID == "" && v.Bootable && slices.ContainsFunc(srv.Volumes, func(a openstack.AttachedVolume) bool { return a.ID == v.ID }) {
			imageID = v.ImageID
		}
	}
	i := slices.IndexFunc(inv.Images, func(img openstack.Image) bool { return img.ID == imageID })
	if i < 0 || inv.Images[i].HashAlgo != "sha512" {
		return nil
	}
	sum := func(b []byte) string { s := sha512.Sum512(b); return hex.EncodeToString(s[:]) }
	for id := range l.Factory.Schematics() {
		for _, version := range l.opts.TalosVersions {
			data, ok := l.Factory.Artifact(id, version, openStackArtifact)
			if !ok {
				continue
			}
			raw, err := xz.NewReader(bytes.NewReader(data))
			if err != nil {
				continue
			}
			plain, err := io.ReadAll(raw)
			if want := inv.Images[i].HashValue; err == nil && (sum(plain) == want || sum(data) == want) {
				return []talosnode.VMOption{talosnode.DiskImage(talosnode.Image{
					Ref:     l.Factory.URL + "/image/" + id + "/" + version + "/" + openStackArtifact,
					Version: version, Schematic: id, Platform: "openstack", Factory: strings.TrimPrefix(l.Factory.URL, "http://"),
				})}
			}
		}
	}
	return nil
}

// forwardFloatingIP serves fip as NAT to fixed.
func (l *Lab) forwardFloatingIP(fip, fixed netip.Addr) error {
	if err := l.nat.Add(l.ctx, fip, fixed); err != nil {
		l.logf("openstack: floating IP %s → %s: %v", fip, fixed, err)
		return err
	}
	return nil
}

// serverAddress is the first fixed IP of the server's first port.
func serverAddress(ev openstack.Event) (netip.Addr, bool) {
	for _, p := range ev.Ports {
		for _, ip := range p.FixedIPs {
			if a, err := netip.ParseAddr(ip.IPAddress); err == nil && a.IsLoopback() {
				return a, true
			}
		}
	}
	return netip.Addr{}, false
}

// writeOpenStackDir writes a cluster directory for the lab's OpenStack: an
// application credential of the member user in secrets.yaml, a 127.x
// cluster network, and clouds.yaml for the openstack CLI.
func (l *Lab) writeOpenStackDir(dir, name string) ([]string, error) {
	cred, err := l.OpenStack.CreateApplicationCredential("demo", "talosc-"+name)
	if err != nil {
		return nil, err
	}
	files, err := WriteOpenStackCluster(dir, OpenStackCluster{
		Name: name, AuthURL: l.OpenStack.AuthURL(), Region: l.OpenStack.Region(),
		CIDR: cmp.Or(l.opts.ClusterCIDR, "127.16.0.0/24"), CredentialID: cred.ID, CredentialSecret: cred.Secret,
		Comment: "Written by talosc-lab for its simulated OpenStack.", Factory: l.Factory,
	})
	if err != nil {
		return nil, err
	}
	more, err := writeFiles(dir, []file{{"clouds.yaml", l.OpenStack.CloudsYAML(cred)}})
	return append(files, more...), err
}

// OpenStackCluster is what a lab cluster directory for an OpenStack (the
// lab's, or a real one the lab follows) says.
type OpenStackCluster struct {
	Name, AuthURL, Region, CIDR    string
	CredentialID, CredentialSecret string
	// Comment heads cluster.yaml.
	Comment string
	// Factory is the lab's Image Factory, which cluster.yaml names
	// (talos.image_factory, kubernetes.kubelet_repository).
	Factory *imagefactory.Factory
}

// WriteOpenStackCluster writes cluster.yaml and secrets.yaml (0600) for c
// into dir: 3 control planes and 2 workers on the flavors talos.cp and
// talos.worker (the lab's and the real openstack-lab's), 20 GB disks (the
// boot image's minimum), the external network "public", MTU 1450 (what
// both Neutrons allow), loopback allowlists and the lab's Image Factory.
func WriteOpenStackCluster(dir string, c OpenStackCluster) ([]string, error) {
	cluster := fmt.Appendf(nil, `# %s
name: %s
include: [secrets.yaml]
%scontrolplane:
  count: 3
  flavor: talos.cp
  disk: 20
workers:
  worker:
    count: 2
    flavor: talos.worker
    disk: 20
openstack:
  url: %s
  allow_http: true # the lab serves on loopback
  availability_zone: nova
  external_net: public
  region: %s
network:
  cluster:
    cidr: %s
    mtu: 1450
%s`, c.Comment, c.Name, releasesYAML(c.Factory), c.AuthURL, c.Region, c.CIDR, loopbackYAML)
	secrets := fmt.Appendf(nil, "openstack:\n  credential_id: %s\n  credential_secret: %s\n", c.CredentialID, c.CredentialSecret)
	return writeFiles(dir, []file{{"cluster.yaml", cluster}, {"secrets.yaml", secrets}})
}
