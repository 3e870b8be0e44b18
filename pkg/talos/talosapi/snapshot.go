package talosapi

import (
	"context"
	"fmt"
	"io"
	"os"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// EtcdSnapshot streams a snapshot of node's etcd member into f (opened
// for writing, read from the start afterwards by the caller), as
// `talosctl etcd snapshot` does, and returns its size. Each attempt starts
// f again from empty, so an Unavailable answer is retried; the stream is
// bounded by Options.PullTimeout, as an image pull is. A stream cut short
// can end without an error (machinery reads a cancelled stream as its
// end): only the snapshot's own sha256 trailer proves it whole, which the
// caller verifies.
func (c *Client) EtcdSnapshot(ctx context.Context, node string, f *os.File) (int64, error) {
	var n int64
	err := c.readWithin(ctx, "EtcdSnapshot", node, c.opts.PullTimeout, false, func(ctx context.Context) error {
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		r, err := c.c.EtcdSnapshot(ctx, &machineapi.EtcdSnapshotRequest{})
		if err != nil {
			return err
		}
		defer r.Close()
		n, err = io.Copy(f, r)
		if err != nil {
			return fmt.Errorf("after %d bytes: %w", n, err)
		}
		return nil
	})
	return n, err
}
