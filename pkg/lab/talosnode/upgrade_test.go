package talosnode_test

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/cluster"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// extensions lists the (name, version) pairs of a node's ExtensionStatus
// resources.
func extensions(t *testing.T, c *client.Client) map[string]string {
	t.Helper()
	list, err := safe.StateListAll[*runtime.ExtensionStatus](ctx(t, 2*time.Second), c.COSI)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for e := range list.All() {
		out[e.TypedSpec().Metadata.Name] = e.TypedSpec().Metadata.Version
	}
	return out
}

// tag is the node's running Talos version, "" while unreachable.
func tag(t *testing.T, c *client.Client) string {
	t.Helper()
	v, err := c.Version(ctx(t, time.Second))
	if err != nil {
		return ""
	}
	return v.GetMessages()[0].GetVersion().GetTag()
}

func TestUpgradeChangesVersionAndSchematic(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	iscsi := factory.SchematicFor([]string{factory.ExtensionQEMUGuestAgent, "siderolabs/iscsi-tools"})
	newID, err := iscsi.ID()
	if err != nil {
		t.Fatal(err)
	}
	l := newLab(t, fx, talosnode.Options{Schematics: fx.schematics(iscsi)})
	l.bootstrapped()
	c1 := l.client(cp(1))
	oldID := fx.plan.Installers[0].SchematicID
	if got := extensions(t, c1); got["schematic"] != oldID || got["qemu-guest-agent"] == "" || len(got) != 2 {
		t.Fatalf("extensions before: %v", got)
	}
	target := factory.InstallerRef("factory.talos.dev", "nocloud", newID, "v1.14.2", false)

	unknown := factory.InstallerRef("factory.talos.dev", "nocloud", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "v1.14.2", false)
	if _, err := legacyUpgrade(t, c1, unknown); !contains(err, "error validating installer image") {
		t.Fatalf("upgrade to an unknown schematic: %v", err)
	}
	l.nodes[cp(3)].PowerOff()
	if _, err := legacyUpgrade(t, c1, target); !contains(err, "error validating etcd for upgrade") {
		t.Fatalf("upgrade with a member down: %v", err)
	}
	l.nodes[cp(3)].PowerOn()
	eventually(t, "cp-03 back", func() bool { return l.startedMembersUp() == 3 })

	boots := l.nodes[cp(1)].Status().Boots
	resp, err := legacyUpgrade(t, c1, target)
	if err != nil || resp.GetMessages()[0].GetAck() != "Upgrade request received" {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	l.waitReboot(cp(1), boots)
	eventually(t, "v1.14.2 running", func() bool { return tag(t, c1) == "v1.14.2" })
	got := extensions(t, c1)
	if got["schematic"] != newID || got["iscsi-tools"] == "" {
		t.Fatalf("extensions after: %v", got)
	}
	s, err := safe.StateGetByID[*runtime.ImageFactorySchematic](ctx(t, 2*time.Second), c1.COSI, runtime.ImageFactorySchematicID)
	if err != nil || s.TypedSpec().SchematicID != newID || s.TypedSpec().APIURL != "https://factory.talos.dev" {
		t.Fatalf("ImageFactorySchematic: %v %v", s, err)
	}
	// the other nodes still run the old version, and see cp-01's new one
	if v := tag(t, l.client(cp(2))); v != talos114 {
		t.Fatalf("cp-02 runs %q", v)
	}
	if st := l.nodes[cp(1)].Status(); st.Version != "v1.14.2" || st.Schematic != newID {
		t.Fatalf("status %+v", st)
	}
	eventually(t, "discovery shows the new OS", func() bool {
		list, err := safe.StateListAll[*clusterMember](ctx(t, time.Second), l.client(cp(2)).COSI)
		if err != nil {
			return false
		}
		return slices.ContainsFunc(slices.Collect(list.All()), func(m *clusterMember) bool {
			return m.TypedSpec().Hostname == cp(1) && m.TypedSpec().OperatingSystem == "Talos (v1.14.2)"
		})
	})
}

// legacyUpgrade is MachineService.Upgrade, deprecated in 1.14 but what
// Talos ≤ 1.13 nodes (and talosctl --legacy) use.
func legacyUpgrade(t *testing.T, c *client.Client, image string) (*machine.UpgradeResponse, error) {
	t.Helper()
	return c.MachineClient.Upgrade(ctx(t, 2*time.Second), &machine.UpgradeRequest{Image: image}) //nolint:staticcheck // the legacy path is simulated too
}

func TestUpgradeThroughLifecycleService(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.boot(cp(1), worker)
	c := l.client(worker)
	target := factory.InstallerRef("factory.talos.dev", "nocloud", fx.plan.Installers[0].SchematicID, "v1.14.3", false)

	if _, err := lifecycleUpgrade(t, c, systemContainerd, target); status.Code(err) != codes.Internal {
		t.Fatalf("upgrade before pulling: %v, want Internal", err)
	}
	if _, err := pull(t, c, nil, target); status.Code(err) != codes.InvalidArgument || !contains(err, "invalid containerd namespace NS_UNKNOWN") {
		t.Fatalf("pull without a containerd instance: %v, want InvalidArgument", err)
	}
	name, err := pull(t, c, systemContainerd, target)
	if want := "factory.talos.dev/nocloud-installer/" + fx.plan.Installers[0].SchematicID + "@sha256:"; err != nil || !strings.HasPrefix(name, want) {
		t.Fatalf("pull = %q, %v; want %s…", name, err, want)
	}
	if _, err := lifecycleUpgrade(t, c, criContainerd, target); status.Code(err) != codes.Internal || !contains(err, "not found in containerd store") {
		t.Fatalf("upgrade from another store than the pull's: %v", err)
	}
	progress, err := lifecycleUpgrade(t, c, systemContainerd, target)
	if err != nil || progress[len(progress)-1] != "Exit code: 0" {
		t.Fatalf("upgrade: %v %v", progress, err)
	}
	if v := tag(t, c); v != talos114 {
		t.Fatalf("version before the reboot %q", v)
	}
	if err := c.Reboot(ctx(t, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "v1.14.3 after the reboot", func() bool { return tag(t, c) == "v1.14.3" })
}

// The containerd stores talosctl upgrade uses (the CRI's containerd,
// system namespace) and the one Kubernetes images live in.
var (
	systemContainerd = &common.ContainerdInstance{Driver: common.ContainerDriver_CRI, Namespace: common.ContainerdNamespace_NS_SYSTEM}
	criContainerd    = &common.ContainerdInstance{Driver: common.ContainerDriver_CRI, Namespace: common.ContainerdNamespace_NS_CRI}
)

// pull is ImageService.Pull of ref into in's store; it returns the name
// the node resolved.
func pull(t *testing.T, c *client.Client, in *common.ContainerdInstance, ref string) (string, error) {
	t.Helper()
	stream, err := c.ImageClient.Pull(ctx(t, 2*time.Second), &machine.ImageServicePullRequest{Containerd: in, ImageRef: ref})
	if err != nil {
		return "", err
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return "", err
		}
		if name := resp.GetName(); name != "" {
			return name, nil
		}
	}
}

// lifecycleUpgrade is LifecycleService.Upgrade of the installer ref from
// in's store; it returns the progress lines ("Exit code: N" last).
func lifecycleUpgrade(t *testing.T, c *client.Client, in *common.ContainerdInstance, ref string) ([]string, error) {
	t.Helper()
	stream, err := c.LifecycleClient.Upgrade(ctx(t, 2*time.Second), &machine.LifecycleServiceUpgradeRequest{
		Containerd: in, Source: &machine.InstallArtifactsSource{ImageName: ref},
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, resp.GetProgress().Fmt())
	}
}

// startedMembersUp counts started etcd members that are up.
func (l *lab) startedMembersUp() int {
	n := 0
	for _, m := range l.nodes[cp(1)].Cluster().EtcdMembers() {
		if m.Up {
			n++
		}
	}
	return n
}

// clusterMember is a discovery member.
type clusterMember = cluster.Member
