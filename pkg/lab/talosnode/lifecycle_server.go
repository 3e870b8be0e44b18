package talosnode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// imageServer is a node's ImageService (the pull half talosctl upgrade
// uses on Talos ≥ 1.13).
type imageServer struct {
	machine.UnimplementedImageServiceServer

	node *Node
}

// lifecycleServer is a node's LifecycleService (Upgrade).
type lifecycleServer struct {
	machine.UnimplementedLifecycleServiceServer

	node *Node
}

// imageStore is one containerd image store: the system containerd or the
// CRI's, and a namespace in it.
type imageStore struct {
	driver    common.ContainerDriver
	namespace common.ContainerdNamespace
}

// containerdStore is Talos's ContainerdInstanceHelper: the store a
// request's containerd instance names, or its InvalidArgument refusal.
func containerdStore(in *common.ContainerdInstance) (imageStore, error) {
	st := imageStore{driver: in.GetDriver(), namespace: in.GetNamespace()}
	switch st.driver {
	case common.ContainerDriver_CONTAINERD, common.ContainerDriver_CRI:
	default:
		return imageStore{}, status.Errorf(codes.InvalidArgument, "invalid containerd driver %s", st.driver)
	}
	switch st.namespace {
	case common.ContainerdNamespace_NS_CRI, common.ContainerdNamespace_NS_SYSTEM:
	default:
		return imageStore{}, status.Errorf(codes.InvalidArgument, "invalid containerd namespace %s", st.namespace)
	}
	if st.driver == common.ContainerDriver_CONTAINERD && st.namespace == common.ContainerdNamespace_NS_CRI {
		return imageStore{}, status.Errorf(codes.InvalidArgument, "cannot use CRI namespace with containerd driver")
	}
	return st, nil
}

// pulledImage is an image in a store: an installer knows the Talos it
// installs.
type pulledImage struct {
	installer bool
	image     Image
}

// pullKey is an image reference in a store.
type pullKey struct {
	store imageStore
	ref   string
}

// errImageNotFound is a pull of an image its registry does not have.
var errImageNotFound = errors.New("not found")

// pullStatus is the gRPC error of a failed pull: NotFound for a missing
// image, as machined answers.
func pullStatus(err error) error {
	if errors.Is(err, errImageNotFound) {
		return status.Errorf(codes.NotFound, "error pulling image: %s", err)
	}
	return status.Error(codes.Unknown, err.Error())
}

// Pull "pulls" an image into one of the node's containerd stores (see
// pull); the answer is the name containerd resolved it to.
func (s *imageServer) Pull(in *machine.ImageServicePullRequest, srv grpc.ServerStreamingServer[machine.ImageServicePullResponse]) error {
	store, err := containerdStore(in.GetContainerd())
	if err != nil {
		return err
	}
	name, err := s.node.pull(store, in.GetImageRef())
	if err != nil {
		return pullStatus(err)
	}
	return srv.Send(&machine.ImageServicePullResponse{Response: &machine.ImageServicePullResponse_Name{Name: name}})
}

// ImagePull is MachineService's older image pull, always into the CRI's
// containerd.
func (s *machineServer) ImagePull(_ context.Context, in *machine.ImagePullRequest) (*machine.ImagePullResponse, error) {
	switch in.GetNamespace() {
	case common.ContainerdNamespace_NS_CRI, common.ContainerdNamespace_NS_SYSTEM:
	default:
		return nil, status.Errorf(codes.InvalidArgument, "invalid namespace %s", in.GetNamespace())
	}
	store := imageStore{driver: common.ContainerDriver_CRI, namespace: in.GetNamespace()}
	if _, err := s.node.pull(store, in.GetReference()); err != nil {
		return nil, pullStatus(err)
	}
	return &machine.ImagePullResponse{Messages: []*machine.ImagePull{{}}}, nil
}

// pull remembers ref as pulled into store and returns its canonical name.
// Any image reference pulls; an installer's must also be one the lab can
// install (see pullInstaller).
func (n *Node) pull(store imageStore, ref string) (string, error) {
	name, err := canonicalName(ref)
	if err != nil {
		return "", err
	}
	img := pulledImage{installer: isInstaller(ref), image: Image{Ref: ref}}
	if img.installer {
		if img.image, err = n.pullInstaller(ref); err != nil {
			return "", err
		}
	}
	n.fleet.mu.Lock()
	if n.pulled == nil {
		n.pulled = map[pullKey]pulledImage{}
	}
	// containerd finds the image by the reference it was pulled by and by
	// the name the pull answered
	n.pulled[pullKey{store, ref}] = img
	n.pulled[pullKey{store, name}] = img
	n.fleet.mu.Unlock()
	return name, nil
}

// Upgrade runs the installer of a pulled image: it streams progress, takes
// Timing.Install and ends with an exit code. The new Talos runs after the
// next reboot, which the client asks for (talosctl upgrade does).
func (s *lifecycleServer) Upgrade(in *machine.LifecycleServiceUpgradeRequest, srv grpc.ServerStreamingServer[machine.LifecycleServiceUpgradeResponse]) error {
	n := s.node
	f := n.fleet
	f.mu.Lock()
	busy, configured := n.installing, n.cfg != nil
	n.installing = !busy && configured
	f.mu.Unlock()
	switch {
	case busy:
		return status.Error(codes.FailedPrecondition, "another installation/upgrade is already in progress")
	case !configured:
		return status.Error(codes.FailedPrecondition, "machine is not installed")
	}
	defer func() {
		f.mu.Lock()
		n.installing = false
		f.mu.Unlock()
	}()
	img, err := n.installerFor(in)
	if err != nil {
		return err
	}
	send := func(p *machine.LifecycleServiceInstallProgress) error {
		return srv.Send(&machine.LifecycleServiceUpgradeResponse{Progress: p})
	}
	msg := func(s string) *machine.LifecycleServiceInstallProgress {
		return &machine.LifecycleServiceInstallProgress{Response: &machine.LifecycleServiceInstallProgress_Message{Message: s}}
	}
	exit := func(code int32) *machine.LifecycleServiceInstallProgress {
		return &machine.LifecycleServiceInstallProgress{Response: &machine.LifecycleServiceInstallProgress_ExitCode{ExitCode: code}}
	}
	if err := send(msg(fmt.Sprintf("running installer %s", img.Ref))); err != nil {
		return err
	}
	f.mu.Lock()
	install, failure := f.timing.Install, n.knobs.InstallFails
	f.mu.Unlock()
	t := time.NewTimer(install)
	select {
	case <-srv.Context().Done():
		t.Stop()
		return status.FromContextError(srv.Context().Err()).Err()
	case <-t.C:
	}
	if failure != "" {
		if err := send(msg("error: " + failure)); err != nil {
			return err
		}
		return send(exit(1))
	}
	f.mu.Lock()
	n.pending = &img
	f.mu.Unlock()
	if err := send(msg(fmt.Sprintf("installed Talos %s, reboot to run it", img.Version))); err != nil {
		return err
	}
	return send(exit(0))
}

// installerFor finds the installer an upgrade request names among the
// images pulled into its store, failing as machined's installer run does.
func (n *Node) installerFor(in *machine.LifecycleServiceUpgradeRequest) (Image, error) {
	ref := in.GetSource().GetImageName()
	if ref == "" {
		return Image{}, status.Error(codes.InvalidArgument, "installer image name is required")
	}
	store, err := containerdStore(in.GetContainerd())
	if err != nil {
		return Image{}, status.Error(codes.Internal, "upgrade failed: "+err.Error())
	}
	n.fleet.mu.Lock()
	img, pulled := n.pulled[pullKey{store, ref}]
	n.fleet.mu.Unlock()
	switch {
	case !pulled:
		return Image{}, status.Errorf(codes.Internal, "upgrade failed: installer image %q not found in containerd store: image %q: not found", ref, ref)
	case !img.installer:
		// containerd runs /bin/installer from the image, which has none
		return Image{}, status.Error(codes.Internal, "upgrade failed: failed to create task: "+noInstaller)
	}
	return img.image, nil
}
