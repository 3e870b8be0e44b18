package talosapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// EtcdState is what a control plane shows of its etcd: whether the
// cluster it belongs to was ever bootstrapped, read from the node itself.
type EtcdState struct {
	// Service is the etcd service's state ("Running", "Preparing", …), ""
	// when the node runs no etcd service (a worker, maintenance mode).
	// A control plane that was never bootstrapped and has not joined a
	// cluster waits in "Preparing" (its pre-stage asks the other control
	// planes to add it, for up to 30 minutes, then it is "Failed").
	Service string
	// Data reports that the etcd data directory (/var/lib/etcd) holds
	// anything: what Talos's Bootstrap itself checks before it refuses
	// with AlreadyExists. etcd writes it as soon as it first starts.
	Data bool
}

// Ran reports evidence that the node's etcd ran: its service runs or its
// data directory is not empty.
func (s EtcdState) Ran() bool { return s.Service == "Running" || s.Data }

// EtcdState reads node's etcd service state (ServiceInfo "etcd") and
// whether its data directory holds anything (a List of /var/lib two levels
// deep, so a removed /var/lib/etcd, as EtcdLeaveCluster leaves it, reads
// as empty rather than as an error). Either read failing is an error: the
// state is then unknown.
func (c *Client) EtcdState(ctx context.Context, node string) (EtcdState, error) {
	var st EtcdState
	err := c.read(ctx, "ServiceInfo", node, func(ctx context.Context) error {
		services, err := c.c.ServiceInfo(ctx, "etcd")
		if err != nil {
			return err
		}
		st.Service = ""
		for _, s := range services {
			st.Service = s.Service.GetState()
		}
		return nil
	})
	if err != nil {
		return EtcdState{}, err
	}
	err = c.read(ctx, "List", node, func(ctx context.Context) (err error) {
		st.Data, err = c.hasEntries(ctx, constants.EtcdDataPath)
		return err
	})
	if err != nil {
		return EtcdState{}, err
	}
	return st, nil
}

// hasEntries reports whether dir holds anything, by listing its parent
// two levels deep; an entry the node could not read is an error.
func (c *Client) hasEntries(ctx context.Context, dir string) (bool, error) {
	parent, name := path.Split(dir)
	stream, err := c.c.LS(ctx, &machineapi.ListRequest{Root: path.Clean(parent), Recurse: true, RecursionDepth: 2})
	if err != nil {
		return false, err
	}
	return entriesUnder(stream.Recv, name)
}

// entriesUnder reports whether recv's listing holds anything under name;
// an entry the node could not read is an error (it could be the data, so
// the directory is not known to be empty).
func entriesUnder(recv func() (*machineapi.FileInfo, error), name string) (bool, error) {
	found := false
	for {
		fi, err := recv()
		switch {
		case errors.Is(err, io.EOF):
			return found, nil
		case err != nil:
			return false, err
		case fi.GetError() != "":
			return false, fmt.Errorf("%s: %s", fi.GetName(), fi.GetError())
		}
		if strings.HasPrefix(fi.GetRelativeName(), name+"/") {
			found = true
		}
	}
}
