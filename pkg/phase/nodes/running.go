package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// readRunning reads the running configuration of every machine (at
// address(i)) through the first control plane, several at a time, and
// remembers the Kubernetes images each one gives its components in
// obs.images. A node that does not answer, or whose images cannot be
// read, fails the read: its state is unknown.
func (r *run) readRunning(ctx context.Context, c talosAPI, ms []config.Machine, address func(i int) string) ([][]byte, error) {
	hosts := make([]string, len(ms))
	for i, m := range ms {
		hosts[i] = m.Hostname
	}
	out := make([][]byte, len(ms))
	err := onEachNode(ctx, hosts, func(ctx context.Context, i int) (err error) {
		out[i], err = c.MachineConfig(ctx, address(i))
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, data := range out {
		images, err := machineconfig.RunningImages(data)
		if err == nil && images.Kubelet == "" {
			err = errors.New("it names no kubelet image")
		}
		if err != nil {
			return nil, fmt.Errorf("the Kubernetes images of %s's running configuration cannot be read (%w); refusing to generate its configuration against unknown versions", hosts[i], err)
		}
		r.obs.images[hosts[i]] = images
	}
	return out, nil
}

// onEachNode runs fn for every one of hosts concurrently (at most
// provider.MaxConcurrent at a time). Any node whose fn fails fails the
// whole: what it needs is unknown, so nothing may be assumed of it.
func onEachNode(ctx context.Context, hosts []string, fn func(ctx context.Context, i int) error) error {
	var unread []string
	for i, err := range provider.FanOut(ctx, len(hosts), fn) {
		if err != nil {
			unread = append(unread, fmt.Sprintf("%s: %v", hosts[i], err))
		}
	}
	if len(unread) > 0 {
		return fmt.Errorf("the running configuration of %d node(s) could not be read, so whether they need changes is unknown; refusing to go on (bring them back, or remove them from cluster.yaml): %s",
			len(unread), strings.Join(unread, "; "))
	}
	return ctx.Err()
}

// generate is m's configuration at the pinned Talos version (which
// preflight and the Talos upgrade hold every node to). A new machine
// (images zero) boots at the pinned Kubernetes version; an existing one is
// generated at the images it runs, so that only the Kubernetes upgrade
// moves its components (one step, component and node at a time, I-13),
// and at the lowest version they run for what follows the node's version
// (the Proxmox return path's kube-proxy, I-R12).
func (r *run) generate(input machineconfig.Input, m config.Machine, images machineconfig.KubernetesImages) (*machineconfig.Config, error) {
	n := machineconfig.Node{Machine: m, TalosVersion: r.cfg.Talos.Version, KubernetesVersion: r.cfg.Kubernetes.Version}
	if images != (machineconfig.KubernetesImages{}) {
		v, err := lowestKubernetes([]kubeNode{{machine: m, images: images}})
		if err != nil {
			return nil, err
		}
		if m.Role != config.RoleControlPlane {
			images = machineconfig.KubernetesImages{Kubelet: images.Kubelet} // a worker runs no other component
		}
		n.KubernetesVersion, n.Images = v.String(), images
	}
	return machineconfig.Generate(input, n)
}
