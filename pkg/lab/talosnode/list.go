package talosnode

import (
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// List walks a directory of the node as machined does (archiver.Walker):
// the root itself ("."), then every entry in lexical order, down to
// RecursionDepth levels when Recurse is set (0: all of them), only the
// root when it is not. The simulation's file system is /var/lib: the CRI's
// and the kubelet's directories and, on a control plane, /var/lib/etcd,
// which holds "member" once the node's etcd has data (bootstrapped or
// joined); any other root is missing, as Walker's lstat reports it.
func (s *machineServer) List(in *machine.ListRequest, srv grpc.ServerStreamingServer[machine.FileInfo]) error {
	n := s.node
	if _, err := n.requireConfig("list"); err != nil {
		return err
	}
	root := path.Clean("/" + in.GetRoot())
	tree := n.varLib()
	if !slices.Contains(tree, root) {
		return status.Errorf(codes.Unknown, "lstat %s: no such file or directory", root)
	}
	maxDepth := 0 // the root only
	if in.GetRecurse() {
		maxDepth = int(in.GetRecursionDepth())
		if maxDepth == 0 {
			maxDepth = -1 // no limit
		}
	}
	for _, p := range tree {
		rel, ok := relativeTo(root, p)
		if !ok || maxDepth >= 0 && levels(rel) > maxDepth {
			continue
		}
		if err := srv.Send(&machine.FileInfo{Name: p, RelativeName: rel, IsDir: true, Mode: uint32(fs.ModeDir | 0o755)}); err != nil {
			return err
		}
	}
	return nil
}

// varLib is the node's /var/lib, every directory by absolute path in
// lexical order; f.mu is taken.
func (n *Node) varLib() []string {
	n.fleet.mu.Lock()
	cp, data := n.cfg != nil && n.cfg.controlPlane(), n.etcdData
	n.fleet.mu.Unlock()
	tree := []string{"/var/lib", "/var/lib/containerd", "/var/lib/kubelet"}
	if cp {
		tree = append(tree, constants.EtcdDataPath)
	}
	if cp && data {
		tree = append(tree, constants.EtcdDataPath+"/member")
	}
	slices.Sort(tree)
	return tree
}

// relativeTo is p relative to root ("." for root itself), ok false when p
// is not under root.
func relativeTo(root, p string) (string, bool) {
	if p == root {
		return ".", true
	}
	rel, ok := strings.CutPrefix(p, root+"/")
	return rel, ok
}

// levels is how deep a relative path lies below its root (0 for ".").
func levels(rel string) int {
	if rel == "." {
		return 0
	}
	return strings.Count(rel, "/") + 1
}
