package talosnode

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// machineServer is a node's MachineService.
type machineServer struct {
	machine.UnimplementedMachineServiceServer

	node *Node
}

// requireConfig refuses an API that needs a configured node, as machined
// does in maintenance mode.
func (n *Node) requireConfig(api string) (*machineConfig, error) {
	n.fleet.mu.Lock()
	defer n.fleet.mu.Unlock()
	if n.cfg == nil {
		return nil, status.Errorf(codes.Unimplemented, "machine type is not set, cannot use %s API", api)
	}
	return n.cfg, nil
}

// requireControlPlane is machinehelper.CheckControlplane.
func (n *Node) requireControlPlane(api string) (*machineConfig, error) {
	mc, err := n.requireConfig(api)
	if err != nil {
		return nil, err
	}
	if !mc.controlPlane() {
		return nil, status.Errorf(codes.Unimplemented, "%s is only available on control plane nodes", api)
	}
	return mc, nil
}

// Version reports the Talos version the node runs.
func (s *machineServer) Version(context.Context, *emptypb.Empty) (*machine.VersionResponse, error) {
	n := s.node
	n.fleet.mu.Lock()
	img, configured := n.image, n.cfg != nil
	n.fleet.mu.Unlock()
	sum := sha256.Sum256([]byte("talos " + img.Version))
	v := &machine.Version{
		Version: &machine.VersionInfo{
			Tag: img.Version, Sha: hex.EncodeToString(sum[:])[:8],
			GoVersion: goruntime.Version(), Os: "linux", Arch: "amd64",
		},
		Platform: &machine.PlatformInfo{Name: img.Platform, Mode: platformMode(img.Platform)},
	}
	if configured {
		v.Features = &machine.FeaturesInfo{Rbac: true}
	}
	return &machine.VersionResponse{Messages: []*machine.Version{v}}, nil
}

// platformMode is the Talos runtime mode of a platform.
func platformMode(platform string) string {
	switch platform {
	case "metal":
		return "metal"
	case "container", "docker":
		return "container"
	default:
		return "cloud"
	}
}

// etcdState is the etcd service as a control plane reports it; f.mu held.
func (n *Node) etcdState() serviceState {
	if st, ok := n.recoveryState(); ok {
		return st
	}
	switch {
	case !n.etcdData && (!n.cluster.etcd.bootstrapped || n.etcdMember == nil):
		// no data: waiting for a bootstrap, or to join (a wiped member)
		return serviceState{"Preparing", "Running pre state", false}
	case n.etcdMember == nil || n.cluster.etcd.member(n.etcdMember.id) == nil:
		return serviceState{"Failed", "the member has been permanently removed from the cluster", false}
	case !n.etcdMember.started:
		return serviceState{"Preparing", "Running pre state", false}
	case !n.cluster.etcd.quorum():
		return serviceState{"Running", "Health check failed: " + etcdErrNoLeader, false}
	}
	return serviceState{"Running", "Health check successful", true}
}

// Reboot reboots the node after answering.
func (s *machineServer) Reboot(context.Context, *machine.RebootRequest) (*machine.RebootResponse, error) {
	if _, err := s.node.requireConfig("reboot"); err != nil {
		return nil, status.Error(codes.FailedPrecondition, "method is not supported in maintenance mode")
	}
	s.node.rebootSoon()
	return &machine.RebootResponse{Messages: []*machine.Reboot{{ActorId: actorID()}}}, nil
}

// Shutdown powers the node off after answering.
func (s *machineServer) Shutdown(context.Context, *machine.ShutdownRequest) (*machine.ShutdownResponse, error) {
	n := s.node
	n.fleet.mu.Lock()
	n.stage = runtime.MachineStageShuttingDown
	n.fleet.mu.Unlock()
	n.fleet.after(time.Millisecond, n.PowerOff)
	return &machine.ShutdownResponse{Messages: []*machine.Shutdown{{ActorId: actorID()}}}, nil
}

// Upgrade installs another Talos (image ref) and reboots into it after
// Timing.Install; a staged upgrade installs at the next reboot.
func (s *machineServer) Upgrade(_ context.Context, in *machine.UpgradeRequest) (*machine.UpgradeResponse, error) {
	n := s.node
	mc, err := n.requireConfig("upgrade")
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, "Talos is not installed")
	}
	img, err := n.pullInstaller(in.GetImage())
	if err != nil {
		return nil, fmt.Errorf("error validating installer image %q: %w", in.GetImage(), err)
	}
	f := n.fleet
	f.mu.Lock()
	if mc.controlPlane() && !in.GetForce() && !in.GetPreserve() {
		if err := n.cluster.etcd.validateForUpgrade(); err != nil {
			f.mu.Unlock()
			return nil, fmt.Errorf("error validating etcd for upgrade: %w", err)
		}
	}
	n.pending = &img
	g := n.gen
	if !in.GetStage() {
		n.stage = runtime.MachineStageUpgrading
	}
	install := f.timing.Install
	f.mu.Unlock()
	n.syncResources()
	if !in.GetStage() {
		f.after(install, func() {
			f.mu.Lock()
			ok := n.gen == g
			f.mu.Unlock()
			if ok {
				n.reboot()
			}
		})
	}
	return &machine.UpgradeResponse{Messages: []*machine.Upgrade{{Ack: "Upgrade request received", ActorId: actorID()}}}, nil
}

// noInstaller is how running /bin/installer fails in an image that is not
// an installer.
const noInstaller = `exec: "/bin/installer": stat /bin/installer: no such file or directory`

// pullInstaller "pulls" an installer image: it must be an installer, with
// a release tag and, for an Image Factory image, a schematic the factory
// knows.
func (n *Node) pullInstaller(ref string) (Image, error) {
	if !isInstaller(ref) {
		return Image{}, fmt.Errorf("failed to create task: %s", noInstaller)
	}
	img, err := ParseImage(ref)
	if err != nil {
		return Image{}, fmt.Errorf("failed to pull image: %w", err)
	}
	if img.Schematic != "" && n.fleet.opts.Schematics != nil {
		if _, ok := n.fleet.opts.Schematics(img.Schematic); !ok {
			return Image{}, fmt.Errorf("failed to pull image %q: %s: %w", ref, strings.TrimSuffix(ref, ":"+img.Version), errImageNotFound)
		}
	}
	return img, nil
}

// validateForUpgrade is etcd's pre-upgrade check on a control plane.
func (e *etcdCluster) validateForUpgrade() error {
	if err := e.requireLeader(); err != nil {
		return err
	}
	if len(e.members) == 2 {
		return fmt.Errorf("etcd member count(%d) is insufficient to maintain quorum if upgrade commences", len(e.members))
	}
	for _, m := range e.members {
		if m.name == "" {
			return fmt.Errorf("etcd member %016x is not started, all members must be running to perform an upgrade", m.id)
		}
		if !m.up() {
			return fmt.Errorf("etcd member %016x is not healthy; all members must be healthy to perform an upgrade: %w",
				m.id, fmt.Errorf("context deadline exceeded"))
		}
	}
	return nil
}

// actorID is a fresh actor id (Talos uses UUIDs).
func actorID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
