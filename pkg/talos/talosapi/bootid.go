package talosapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// bootIDPath is the kernel's id of the current boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// BootID returns node's boot id: a random id the kernel makes at every
// boot, so a different one proves the node rebooted, whether or not apid
// was ever seen down (I-R7 as day2.md §7 corrects it). It reads
// /proc/sys/kernel/random/boot_id through MachineService.Read, as
// talosctl's reboot tracker does: that works on every Talos version,
// while the BootID resource exists only from 1.14 (os:admin only, which
// talosc's certificate is).
func (c *Client) BootID(ctx context.Context, node string) (string, error) {
	var id string
	err := c.read(ctx, "Read boot_id", node, func(ctx context.Context) (err error) {
		id, err = c.bootID(ctx)
		return err
	})
	return id, err
}

// bootID is one read of the boot id.
func (c *Client) bootID(ctx context.Context) (string, error) {
	r, err := c.c.Read(ctx, bootIDPath)
	if err != nil {
		return "", err
	}
	defer func() { _ = r.Close() }()
	b, err := io.ReadAll(io.LimitReader(r, 256))
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", errors.New("empty boot id")
	}
	return id, nil
}

// WaitRebooted polls node's boot id (backing off from ctxwait.FirstPoll to
// every poll) until it differs from
// previousBootID (read before the action that reboots it), for up to
// budget. The node may be unreachable in between, or never be seen down:
// only the new id counts. progress, if not nil, is told the time waited
// after every attempt that did not see a new id. An empty previousBootID
// is refused: any id would read as a reboot.
func (c *Client) WaitRebooted(ctx context.Context, node, previousBootID string, budget, poll time.Duration, progress func(elapsed time.Duration)) error {
	if previousBootID == "" {
		return fmt.Errorf("talos node %s: no boot id to compare with, cannot tell a reboot", node)
	}
	start := time.Now()
	same, down := 0, 0
	err := pollUntil(ctx, budget, poll, func(ctx context.Context) (bool, error) {
		var id string
		err := c.call(ctx, "Read boot_id", node, c.opts.CallTimeout, func(ctx context.Context) (err error) {
			id, err = c.bootID(ctx)
			return err
		})
		switch {
		case err != nil:
			down++
		case id != previousBootID:
			return true, nil
		default:
			same++
			err = fmt.Errorf("boot id still %s", id)
		}
		if progress != nil {
			progress(time.Since(start))
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("talos node %s did not reboot (%d answers with the old boot id, %d without an answer): %w", node, same, down, err)
	}
	return nil
}
