package talosapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrInstallFailed is wrapped by Upgrade's error when the installer ran
// and exited non-zero: the node keeps running its current Talos, and
// rebooting it would not upgrade it.
var ErrInstallFailed = errors.New("installer failed")

// installerTail is how many of the installer's last messages a failure
// quotes.
const installerTail = 5

// Talos's answer to an Upgrade while another install runs (its
// LifecycleService holds an in-process mutex).
const answerInstallRunning = "already in progress"

// Upgrade installs the Talos of the installer image on node the way
// talosctl upgrade does on Talos ≥ 1.13.0 (day2.md §2.1): ImageService.Pull
// into containerd's system namespace, then LifecycleService.Upgrade of the
// pulled image, whose stream ends with the installer's exit code. It does
// not drain and does not reboot: the new Talos runs after Reboot.
//
// The pull is retried when answered Unavailable (pulling twice is
// harmless); the install is asked once. A non-zero exit code wraps
// ErrInstallFailed with the installer's last messages; another install
// still running on the node is reported as such; an answer lost in the
// middle says the installer may have run, since the caller cannot tell
// (it must not count the node as installed, and not as untouched
// either). progress, if not nil, gets the pull's start and end and every
// installer message.
func (c *Client) Upgrade(ctx context.Context, node, installer string, progress func(string)) error {
	if progress == nil {
		progress = func(string) {}
	}
	progress("pulling " + installer)
	name, err := c.pull(ctx, node, installer, common.ContainerdNamespace_NS_SYSTEM)
	if err != nil {
		return err
	}
	progress("pulled " + installer)
	err = c.call(ctx, "Upgrade to "+installer, node, c.opts.InstallTimeout, func(ctx context.Context) error {
		return c.install(ctx, name, progress)
	})
	switch {
	case err == nil, ctx.Err() != nil, errors.Is(err, ErrInstallFailed):
		return err
	case nodeStatus(err).Code() == codes.FailedPrecondition && strings.Contains(nodeStatus(err).Message(), answerInstallRunning):
		return fmt.Errorf("%w (another install or upgrade runs on the node; this one did not start)", err)
	case answerLost(err) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w (%w: the installer may have run)", err, ErrAnswerLost)
	}
	return err
}

// install is one LifecycleService.Upgrade stream of the pulled image name:
// nil for exit code 0. An exit code received decides, whatever breaks
// after it.
func (c *Client) install(ctx context.Context, name string, progress func(string)) error {
	stream, err := c.c.LifecycleClient.Upgrade(ctx, &machineapi.LifecycleServiceUpgradeRequest{
		Containerd: criContainerd(common.ContainerdNamespace_NS_SYSTEM),
		Source:     &machineapi.InstallArtifactsSource{ImageName: name},
	})
	if err != nil {
		return err
	}
	var tail []string
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return errors.New("the installer's stream ended without an exit code")
		}
		if err != nil {
			return err
		}
		switch r := resp.GetProgress().GetResponse().(type) {
		case *machineapi.LifecycleServiceInstallProgress_Message:
			msg := strings.TrimSpace(r.Message)
			progress(msg)
			if tail = append(tail, msg); len(tail) > installerTail {
				tail = tail[1:]
			}
		case *machineapi.LifecycleServiceInstallProgress_ExitCode:
			if r.ExitCode != 0 {
				return fmt.Errorf("%w with exit code %d; its last messages: %s", ErrInstallFailed, r.ExitCode, strings.Join(tail, " | "))
			}
			return nil
		}
	}
}

// PullImage pulls the Kubernetes image ref into node's containerd ahead
// of its upgrade step (upgrade-k8s's pre-pull, day2.md §1.2 step 6): the
// system namespace for the kubelet's image (system true), the CRI's for
// the control-plane images. A node without ImageService (Unimplemented)
// is skipped, as upgrade-k8s skips it: the pull is an optimisation, the
// kubelet pulls the image anyway. An Unavailable answer is retried.
func (c *Client) PullImage(ctx context.Context, node, ref string, system bool) error {
	ns := common.ContainerdNamespace_NS_CRI
	if system {
		ns = common.ContainerdNamespace_NS_SYSTEM
	}
	_, err := c.pull(ctx, node, ref, ns)
	if status.Code(err) == codes.Unimplemented {
		return nil
	}
	return err
}

// pull is ImageService.Pull of ref into the namespace ns, retried when
// answered Unavailable or when its answer was lost (pulling twice is
// harmless), each attempt bounded by Options.PullTimeout: the name of the
// pulled image, which the stream ends with.
func (c *Client) pull(ctx context.Context, node, ref string, ns common.ContainerdNamespace) (string, error) {
	var name string
	err := c.readWithin(ctx, "Pull "+ref, node, c.opts.PullTimeout, true, func(ctx context.Context) error {
		stream, err := c.c.ImageClient.Pull(ctx, &machineapi.ImageServicePullRequest{Containerd: criContainerd(ns), ImageRef: ref})
		if err != nil {
			return err
		}
		for {
			resp, err := stream.Recv()
			switch {
			case errors.Is(err, io.EOF) && name == "":
				return errors.New("the pull ended without the image's name")
			case errors.Is(err, io.EOF):
				return nil
			case err != nil:
				return err
			}
			if n := resp.GetName(); n != "" {
				name = n
			}
		}
	})
	return name, err
}

// criContainerd is the node's CRI containerd in namespace ns, as
// talosctl image pull --namespace system|cri and talosctl upgrade ask for.
func criContainerd(ns common.ContainerdNamespace) *common.ContainerdInstance {
	return &common.ContainerdInstance{Driver: common.ContainerDriver_CRI, Namespace: ns}
}

// ErrAnswerLost marks a call whose answer never came back: what it asked
// may or may not have been done (Upgrade, Reboot).
var ErrAnswerLost = errors.New("an answer was lost")

// Reboot reads node's boot id, then asks MachineService.Reboot (which
// neither drains nor upgrades: it reboots into what is installed). Wait
// for it with WaitRebooted(previousBootID). Without the boot id it does
// not reboot: the reboot could not be told. A second Reboot reboots
// again, so it is asked once; when its answer was lost, previousBootID is
// still returned with the error, and WaitRebooted tells whether the node
// rebooted.
func (c *Client) Reboot(ctx context.Context, node string) (previousBootID string, err error) {
	before, err := c.BootID(ctx, node)
	if err != nil {
		return "", fmt.Errorf("talos Reboot on %s: not rebooting without the boot id to tell the reboot by: %w", node, err)
	}
	err = c.call(ctx, "Reboot", node, c.opts.CallTimeout, func(ctx context.Context) error {
		return c.c.Reboot(ctx)
	})
	if err != nil && ctx.Err() == nil && (answerLost(err) || errors.Is(err, context.DeadlineExceeded)) {
		err = fmt.Errorf("%w (%w: the node may be rebooting)", err, ErrAnswerLost)
	}
	return before, err
}
