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

// readRunningImages reads the running configuration of every machine (at
// address(i)) through the first control plane, several at a time, and
// remembers the Kubernetes images each one gives its components in
// o.images. A node that does not answer, or whose images cannot be
// read, fails the read: its state is unknown.
func (o *observed) readRunningImages(ctx context.Context, c talosAPI, ms []config.Machine, address func(i int) string) ([][]byte, error) {
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
		o.images[hosts[i]] = images
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
