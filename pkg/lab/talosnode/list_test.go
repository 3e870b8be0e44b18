package talosnode_test

import (
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// list is the relative names a List of req streams from node.
func list(t *testing.T, c *client.Client, node string, req *machine.ListRequest) ([]string, error) {
	t.Helper()
	stream, err := c.LS(client.WithNode(ctx(t, 2*time.Second), node), req)
	if err != nil {
		return nil, err
	}
	var out []string
	for {
		fi, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, fi.GetRelativeName())
	}
}

// TestListVarLib: List walks as machined's: the root only without
// Recurse, down to RecursionDepth with it; /var/lib/etcd is empty on a
// control plane until its etcd has data, absent on a worker; a missing
// root is lstat's error; a reader may list.
func TestListVarLib(t *testing.T) {
	t.Parallel()
	l := newLab(t, newFixture(t, talos114), talosnode.Options{})
	l.boot(cp(1), worker)
	c := l.clientAs(cp(1), role.Reader)
	at := func(host string) string { return l.fx.addrs[host].String() }
	for _, tc := range []struct {
		host string
		req  *machine.ListRequest
		want []string
	}{
		{cp(1), &machine.ListRequest{Root: "/var/lib"}, []string{"."}},
		{cp(1), &machine.ListRequest{Root: "var/lib/", Recurse: true, RecursionDepth: 1}, []string{".", "containerd", "etcd", "kubelet"}},
		{cp(1), &machine.ListRequest{Root: "/var/lib/etcd", Recurse: true}, []string{"."}},
		{worker, &machine.ListRequest{Root: "/var/lib", Recurse: true, RecursionDepth: 2}, []string{".", "containerd", "kubelet"}},
	} {
		if got, err := list(t, c, at(tc.host), tc.req); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s List(%v) = %q, %v; want %q", tc.host, tc.req, got, err, tc.want)
		}
	}
	if _, err := list(t, c, at(worker), &machine.ListRequest{Root: "/var/lib/etcd"}); status.Code(err) != codes.Unknown || !contains(err, "lstat /var/lib/etcd: no such file or directory") {
		t.Errorf("List of a missing root = %v, want lstat's error", err)
	}
	admin := l.client(cp(1))
	eventually(t, "bootstrap", func() bool { return admin.Bootstrap(t.Context(), &machine.BootstrapRequest{}) == nil })
	want := []string{".", "containerd", "etcd", "etcd/member", "kubelet"}
	if got, err := list(t, c, at(cp(1)), &machine.ListRequest{Root: "/var/lib", Recurse: true, RecursionDepth: 2}); err != nil || !slices.Equal(got, want) {
		t.Errorf("after bootstrap List = %q, %v; want %q", got, err, want)
	}
}
