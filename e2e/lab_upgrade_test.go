package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/siderolabs/talos/pkg/machinery/client"

	"github.com/talosc/talosc/pkg/talos/identity"

	"github.com/talosc/talosc/pkg/config"
)

// talosClient is a machinery client on DIR's talosconfig (its endpoint,
// its identity), as talosctl --talosconfig DIR/talosconfig would make.
func (s *scriptLab) talosClient(ts *testscript.TestScript, dir string) *client.Client {
	dir = ts.MkAbs(dir)
	id, err := identity.Load(filepath.Join(dir, config.TalosSecretsFile))
	ts.Check(err)
	ep, ok, err := identity.ReadTalosconfigEndpoint(filepath.Join(dir, "talosconfig"))
	if err != nil || !ok {
		ts.Fatalf("no talosconfig endpoint in %s: %v", dir, err)
	}
	tc, err := identity.Talosconfig(id, s.cluster, ep)
	ts.Check(err)
	c, err := client.New(context.Background(), client.WithConfig(tc))
	ts.Check(err)
	return c
}

// talosVersions checks "lab talos-versions DIR VERSION NAME...": talosctl
// version -n NAME (per node, as talosctl multiplexes it) through DIR's
// talosconfig answers VERSION for every NAME.
func (s *scriptLab) talosVersions(ts *testscript.TestScript, args []string) {
	if len(args) < 3 {
		ts.Fatalf("usage: lab talos-versions DIR VERSION NAME...")
	}
	c := s.talosClient(ts, args[0])
	defer c.Close()
	var wrong []string
	for _, name := range args[2:] {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := c.Version(client.WithNode(ctx, s.nodeAddress(ts, name)))
		cancel()
		switch {
		case err != nil:
			wrong = append(wrong, fmt.Sprintf("%s: %v", name, err))
		case len(resp.Messages) != 1 || resp.Messages[0].GetVersion().GetTag() != args[1]:
			wrong = append(wrong, fmt.Sprintf("%s runs %v", name, resp.Messages))
		}
	}
	if len(wrong) > 0 {
		ts.Fatalf("talos versions, want %s everywhere: %s", args[1], strings.Join(wrong, "; "))
	}
}

// waitTalos waits ("lab wait-talos DIR NAME VERSION", up to 2 minutes)
// until node NAME answers talosctl version with VERSION.
func (s *scriptLab) waitTalos(ts *testscript.TestScript, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: lab wait-talos DIR NAME VERSION")
	}
	c := s.talosClient(ts, args[0])
	defer c.Close()
	addr := s.nodeAddress(ts, args[1])
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.Version(client.WithNode(ctx, addr))
		cancel()
		if err == nil && len(resp.Messages) == 1 {
			if last = resp.Messages[0].GetVersion().GetTag(); last == args[2] {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("%s runs %q after 2 minutes, want %s", args[1], last, args[2])
}
