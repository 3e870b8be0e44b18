package talosnode

import (
	"context"
	"fmt"
	"time"

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

// Pull "pulls" an image into the node's containerd: installer images must
// be resolvable (see pullInstaller); the answer is the image's name.
func (s *imageServer) Pull(in *machine.ImageServicePullRequest, srv grpc.ServerStreamingServer[machine.ImageServicePullResponse]) error {
	img, err := s.node.pull(in.GetImageRef())
	if err != nil {
		return status.Error(codes.Unknown, err.Error())
	}
	return srv.Send(&machine.ImageServicePullResponse{Response: &machine.ImageServicePullResponse_Name{Name: img.Ref}})
}

// ImagePull is MachineService's older image pull.
func (s *machineServer) ImagePull(_ context.Context, in *machine.ImagePullRequest) (*machine.ImagePullResponse, error) {
	if _, err := s.node.pull(in.GetReference()); err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &machine.ImagePullResponse{Messages: []*machine.ImagePull{{}}}, nil
}

// pull validates an installer reference and remembers it as pulled.
func (n *Node) pull(ref string) (Image, error) {
	img, err := n.pullInstaller(ref)
	if err != nil {
		return Image{}, err
	}
	n.fleet.mu.Lock()
	if n.pulled == nil {
		n.pulled = map[string]Image{}
	}
	n.pulled[ref] = img
	n.fleet.mu.Unlock()
	return img, nil
}

// Upgrade runs the installer of a pulled image: it streams progress, takes
// Timing.Install and ends with an exit code. The new Talos runs after the
// next reboot, which the client asks for (talosctl upgrade does).
func (s *lifecycleServer) Upgrade(in *machine.LifecycleServiceUpgradeRequest, srv grpc.ServerStreamingServer[machine.LifecycleServiceUpgradeResponse]) error {
	n := s.node
	f := n.fleet
	if _, err := n.requireConfig("upgrade"); err != nil {
		return status.Error(codes.FailedPrecondition, "machine is not installed")
	}
	ref := in.GetSource().GetImageName()
	if ref == "" {
		return status.Error(codes.InvalidArgument, "installer image name is required")
	}
	f.mu.Lock()
	img, pulled := n.pulled[ref]
	busy := n.installing
	n.installing = !busy && pulled
	install := f.timing.Install
	f.mu.Unlock()
	switch {
	case busy:
		return status.Error(codes.FailedPrecondition, "another installation/upgrade is already in progress")
	case !pulled:
		return status.Error(codes.Internal, fmt.Sprintf("upgrade failed: image %q not found: pull it first", ref))
	}
	defer func() {
		f.mu.Lock()
		n.installing = false
		f.mu.Unlock()
	}()
	send := func(p *machine.LifecycleServiceInstallProgress) error {
		return srv.Send(&machine.LifecycleServiceUpgradeResponse{Progress: p})
	}
	msg := func(s string) *machine.LifecycleServiceInstallProgress {
		return &machine.LifecycleServiceInstallProgress{Response: &machine.LifecycleServiceInstallProgress_Message{Message: s}}
	}
	if err := send(msg(fmt.Sprintf("running installer %s", ref))); err != nil {
		return err
	}
	t := time.NewTimer(install)
	select {
	case <-srv.Context().Done():
		t.Stop()
		return status.FromContextError(srv.Context().Err()).Err()
	case <-t.C:
	}
	f.mu.Lock()
	n.pending = &img
	f.mu.Unlock()
	if err := send(msg(fmt.Sprintf("installed Talos %s, reboot to run it", img.Version))); err != nil {
		return err
	}
	return send(&machine.LifecycleServiceInstallProgress{Response: &machine.LifecycleServiceInstallProgress_ExitCode{ExitCode: 0}})
}
