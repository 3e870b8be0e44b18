package talosnode_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// TestPullKubernetesImages: upgrade-k8s's pre-pulls (Kubernetes images,
// legacy ImagePull into NS_CRI, the kubelet into NS_SYSTEM) and
// ImageService pulls of any image succeed with the canonical name; such an
// image is no installer: LifecycleService.Upgrade and the legacy Upgrade
// refuse it and the node keeps its Talos. Malformed references and
// namespaces are refused.
func TestPullKubernetesImages(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.boot(cp(1))
	c := l.client(cp(1))
	const apiServer = "registry.k8s.io/kube-apiserver:v1.35.4"
	for _, tc := range []struct {
		ns  common.ContainerdNamespace
		ref string
	}{
		{common.ContainerdNamespace_NS_CRI, apiServer},
		{common.ContainerdNamespace_NS_SYSTEM, "ghcr.io/siderolabs/kubelet:v1.35.4"},
	} {
		if _, err := c.MachineClient.ImagePull(ctx(t, 2*time.Second), &machine.ImagePullRequest{Namespace: tc.ns, Reference: tc.ref}); err != nil { //nolint:staticcheck // upgrade-k8s still pre-pulls this way
			t.Errorf("ImagePull %s into %s: %v", tc.ref, tc.ns, err)
		}
	}
	if _, err := c.MachineClient.ImagePull(ctx(t, 2*time.Second), &machine.ImagePullRequest{Reference: apiServer}); status.Code(err) != codes.InvalidArgument { //nolint:staticcheck // as above
		t.Errorf("ImagePull without a namespace: %v, want InvalidArgument", err)
	}
	for ref, want := range map[string]string{
		apiServer:            "registry.k8s.io/kube-apiserver@sha256:",
		"nginx:1.27":         "docker.io/library/nginx@sha256:",
		"bitnami/redis:7":    "docker.io/bitnami/redis@sha256:",
		"127.0.0.1:5000/a/b": "127.0.0.1:5000/a/b@sha256:",
	} {
		if name, err := pull(t, c, systemContainerd, ref); err != nil || !strings.HasPrefix(name, want) {
			t.Errorf("pull %s = %q, %v; want %s…", ref, name, err, want)
		}
	}
	if _, err := pull(t, c, systemContainerd, "Not An Image"); err == nil {
		t.Error("pull of a malformed reference succeeded")
	}
	if _, err := pull(t, c, &common.ContainerdInstance{Driver: common.ContainerDriver_CONTAINERD, Namespace: common.ContainerdNamespace_NS_CRI}, apiServer); status.Code(err) != codes.InvalidArgument {
		t.Errorf("pull into the system containerd's CRI namespace: %v, want InvalidArgument", err)
	}

	if _, err := lifecycleUpgrade(t, c, systemContainerd, apiServer); status.Code(err) != codes.Internal || !contains(err, "/bin/installer") {
		t.Errorf("LifecycleService.Upgrade to a Kubernetes image: %v, want the installer run's failure", err)
	}
	if _, err := legacyUpgrade(t, c, apiServer); !contains(err, "error validating installer image") {
		t.Errorf("MachineService.Upgrade to a Kubernetes image: %v", err)
	}
	settle()
	if st := l.nodes[cp(1)].Status(); st.Version != talos114 || st.Boots != 1 {
		t.Errorf("node after refused upgrades: %+v", st)
	}
}

// upgradeTo pulls and installs target on host through the 1.13+ path and
// returns the installer's progress.
func (l *lab) upgradeTo(host, target string) []string {
	l.t.Helper()
	c := l.client(host)
	if _, err := pull(l.t, c, systemContainerd, target); err != nil {
		l.t.Fatal(err)
	}
	progress, err := lifecycleUpgrade(l.t, c, systemContainerd, target)
	if err != nil {
		l.t.Fatal(err)
	}
	return progress
}

// rebootAndWait reboots host as talosctl does after an install and waits
// for it to be back.
func (l *lab) rebootAndWait(host string) {
	l.t.Helper()
	boots := l.nodes[host].Status().Boots
	if err := l.client(host).Reboot(ctx(l.t, 2*time.Second)); err != nil {
		l.t.Fatal(err)
	}
	l.waitReboot(host, boots)
}

// TestInstallFails: with the knob the installer streams its error and exit
// code 1 (the call itself succeeds, as on Talos); nothing was installed, so
// the node reboots into the Talos it ran.
func TestInstallFails(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.boot(cp(1))
	l.nodes[cp(1)].SetKnobs(talosnode.Knobs{InstallFails: "failed to install bootloader: no space left on device"})
	target := factory.InstallerRef("factory.talos.dev", "nocloud", fx.plan.Installers[0].SchematicID, "v1.14.3", false)
	progress := l.upgradeTo(cp(1), target)
	if progress[len(progress)-1] != "Exit code: 1" || !slices.ContainsFunc(progress, func(p string) bool { return strings.Contains(p, "no space left on device") }) {
		t.Fatalf("installer progress %q, want the error and exit code 1", progress)
	}
	l.rebootAndWait(cp(1))
	if v := tag(t, l.client(cp(1))); v != talos114 {
		t.Errorf("version after a failed install and a reboot %q, want %s", v, talos114)
	}
}

// TestBootsOldVersion: with the knob an upgrade installs (exit code 0) but
// the reboot comes back on the old version and schematic, on both upgrade
// paths.
func TestBootsOldVersion(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	other := factory.SchematicFor([]string{factory.ExtensionQEMUGuestAgent, "siderolabs/iscsi-tools"})
	otherID, err := other.ID()
	if err != nil {
		t.Fatal(err)
	}
	l := newLab(t, fx, talosnode.Options{Schematics: fx.schematics(other)})
	l.bootstrapped()
	n := l.nodes[cp(1)]
	before := n.Status()
	n.SetKnobs(talosnode.Knobs{BootsOldVersion: true})
	target := factory.InstallerRef("factory.talos.dev", "nocloud", otherID, "v1.14.3", false)
	if progress := l.upgradeTo(cp(1), target); progress[len(progress)-1] != "Exit code: 0" {
		t.Fatalf("installer progress %q", progress)
	}
	l.rebootAndWait(cp(1))
	if st := n.Status(); st.Version != before.Version || st.Schematic != before.Schematic {
		t.Errorf("after the rollback: %s %s, want %s %s", st.Version, st.Schematic, before.Version, before.Schematic)
	}
	boots := n.Status().Boots
	if resp, err := legacyUpgrade(t, l.client(cp(1)), target); err != nil {
		t.Fatal(resp, err)
	}
	l.waitReboot(cp(1), boots)
	if st := n.Status(); st.Version != before.Version || st.Schematic != before.Schematic {
		t.Errorf("after the legacy upgrade's rollback: %s %s", st.Version, st.Schematic)
	}
	n.SetKnobs(talosnode.Knobs{})
	l.upgradeTo(cp(1), target)
	l.rebootAndWait(cp(1))
	if st := n.Status(); st.Version != "v1.14.3" || st.Schematic != otherID {
		t.Errorf("without the knob: %s %s, want v1.14.3 %s", st.Version, st.Schematic, otherID)
	}
}

// TestUpgradedControlPlaneNeverReturns: RebootHangs is the control plane
// that never comes back from the reboot a client asks for after an
// install; cleared, it boots the new version.
func TestUpgradedControlPlaneNeverReturns(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.bootstrapped()
	n := l.nodes[cp(2)]
	target := factory.InstallerRef("factory.talos.dev", "nocloud", fx.plan.Installers[0].SchematicID, "v1.14.3", false)
	l.upgradeTo(cp(2), target)
	n.SetKnobs(talosnode.Knobs{RebootHangs: true})
	boots := n.Status().Boots
	if err := l.client(cp(2)).Reboot(ctx(t, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "down", func() bool { return !n.Status().APIUp })
	settle()
	if st := n.Status(); st.APIUp || st.Boots != boots || l.startedMembersUp() != 2 {
		t.Fatalf("a hung reboot: %+v, %d etcd members up; want it down", st, l.startedMembersUp())
	}
	n.SetKnobs(talosnode.Knobs{})
	l.waitReboot(cp(2), boots)
	if v := n.Status().Version; v != "v1.14.3" {
		t.Errorf("version once the reboot finished %q", v)
	}
}

// TestDiskImage: a VM started from a disk image (an OpenStack server's
// Glance image) runs the image's Talos version and schematic, not its
// configuration's installer, and gets the installer's only by upgrading
// onto it; a VM booting install media (Proxmox's ISO) runs its installer.
func TestDiskImage(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	base := factory.BaseSchematic()
	baseID, err := base.ID()
	if err != nil {
		t.Fatal(err)
	}
	l := newLab(t, fx, talosnode.Options{Schematics: fx.schematics(base)})
	disk := talosnode.Image{
		Ref:     "http://127.0.0.1:1/image/" + baseID + "/" + talos113 + "/openstack-amd64.raw.xz",
		Version: talos113, Schematic: baseID, Platform: "openstack", Factory: "127.0.0.1:1",
	}
	n, err := l.fleet.Boot(fx.addrs[cp(1)], fx.configs[cp(1)], talosnode.Knobs{}, talosnode.DiskImage(disk))
	if err != nil {
		t.Fatal(err)
	}
	l.nodes[cp(1)] = n
	l.boot(worker)
	if err := n.WaitAPI(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	c := l.client(cp(1))
	if v := tag(t, c); v != talos113 {
		t.Fatalf("version of a disk-image node %q, want the image's %s", v, talos113)
	}
	got := extensions(t, c)
	if got["schematic"] != baseID || got["tailscale"] == "" {
		t.Fatalf("extensions of a disk-image node %v, want the base schematic's", got)
	}
	if st := l.nodes[worker].Status(); st.Version != talos114 || st.Schematic != fx.plan.Installers[0].SchematicID {
		t.Fatalf("an install-media node runs %s %s, want its installer", st.Version, st.Schematic)
	}
	l.upgradeTo(cp(1), fx.plan.ByPool[fx.hosts[0].Pool])
	l.rebootAndWait(cp(1))
	if st := n.Status(); st.Version != talos114 || st.Schematic != fx.plan.Installers[0].SchematicID {
		t.Errorf("after the upgrade onto its installer: %s %s", st.Version, st.Schematic)
	}
}
