package talosnode

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	clusterapi "github.com/siderolabs/talos/pkg/machinery/api/cluster"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// clusterServer is a node's ClusterService.
type clusterServer struct {
	clusterapi.UnimplementedClusterServiceServer

	node *Node
}

// ErrSkip is a condition that does not apply to the cluster (Talos's
// conditions.ErrSkipAssertion): the health check reports it as SKIP and
// goes on, as Talos does. KubeAPI.Check returns it (wrapped or not) for a
// Kubernetes condition that does not apply, such as kube-proxy with no
// DaemonSet.
var ErrSkip = errors.New("SKIP")

// KubernetesChecks are the Kubernetes conditions of the health check, in
// Talos's order, which KubeAPI.Check is asked about.
func KubernetesChecks() []string {
	return []string{
		"all k8s nodes to report",
		"all control plane static pods to be running",
		"all control plane components to be ready",
		"all k8s nodes to report ready",
		"kube-proxy to report ready",
		"coredns to report ready",
		"all k8s nodes to report schedulable",
	}
}

// healthTarget is one node the check expects.
type healthTarget struct {
	NodeInfo
	node *Node
}

// healthCheck is one condition: a name and an assertion over the targets.
type healthCheck struct {
	name   string
	assert func(ctx context.Context, targets []healthTarget) error
}

// HealthCheck is the server-side cluster health check (talosctl health
// --server): it discovers the nodes (or takes the caller's list), then
// waits for each condition in turn, streaming progress as Talos does.
func (s *clusterServer) HealthCheck(in *clusterapi.HealthCheckRequest, srv grpc.ServerStreamingServer[clusterapi.HealthCheckProgress]) error {
	n := s.node
	if _, err := n.requireControlPlane("cluster health check"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(srv.Context(), in.GetWaitTimeout().AsDuration())
	defer cancel()
	targets, err := n.healthTargets(in.GetClusterInfo())
	if err != nil {
		return err
	}
	ips := make([]string, 0, len(targets))
	for _, t := range targets {
		ips = append(ips, t.Address.String())
	}
	if err := srv.Send(&clusterapi.HealthCheckProgress{Message: fmt.Sprintf("discovered nodes: %q", ips)}); err != nil {
		return err
	}
	last := ""
	report := func(line string) error {
		line = strings.TrimSpace("waiting for " + line)
		if line == last {
			return nil
		}
		last = line
		return srv.Send(&clusterapi.HealthCheckProgress{Message: line})
	}
	poll := n.fleet.timing.HealthPoll
	for _, c := range n.healthChecks() {
		if err := n.waitCondition(ctx, c, targets, poll, report); err != nil {
			return err
		}
	}
	return nil
}

// waitCondition polls one condition until it holds, is skipped or the
// context ends. Every poll looks the targets up again, as talosctl dials
// them again: a node that boots during the check is seen.
func (n *Node) waitCondition(ctx context.Context, c healthCheck, targets []healthTarget, poll time.Duration, report func(string) error) error {
	if err := report(c.name + ": ..."); err != nil {
		return err
	}
	for {
		n.lookUp(targets)
		err := c.assert(ctx, targets)
		switch {
		case err == nil:
			return report(c.name + ": OK")
		case errors.Is(err, ErrSkip):
			return report(c.name + ": SKIP")
		}
		if rerr := report(c.name + ": " + err.Error()); rerr != nil {
			return rerr
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return status.FromContextError(ctx.Err()).Err()
		case <-t.C:
		}
	}
}

// healthTargets are the caller's nodes, or the discovered members.
func (n *Node) healthTargets(info *clusterapi.ClusterInfo) ([]healthTarget, error) {
	f := n.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []healthTarget
	add := func(ips []string, cp bool) error {
		for _, ip := range ips {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				return fmt.Errorf("failed to parse IP address %q: %w", ip, err)
			}
			t := healthTarget{NodeInfo: NodeInfo{Address: a, ControlPlane: cp}, node: f.nodes[a]}
			if t.node != nil {
				t.Hostname = t.node.hostname()
			}
			out = append(out, t)
		}
		return nil
	}
	if len(info.GetControlPlaneNodes()) > 0 || len(info.GetWorkerNodes()) > 0 {
		if err := add(info.GetControlPlaneNodes(), true); err != nil {
			return nil, err
		}
		return out, add(info.GetWorkerNodes(), false)
	}
	for _, m := range n.cluster.members {
		out = append(out, healthTarget{NodeInfo: NodeInfo{Hostname: m.hostname(), Address: m.addr, ControlPlane: m.cfg != nil && m.cfg.controlPlane()}, node: m})
	}
	return out, nil
}

// lookUp points each target at the node now serving its address.
func (n *Node) lookUp(targets []healthTarget) {
	f := n.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range targets {
		if node := f.nodes[targets[i].Address]; node != nil {
			targets[i].node, targets[i].Hostname = node, node.hostname()
		}
	}
}

// reachable reports whether a target's apid answers with this cluster's
// identity; f.mu held.
func (n *Node) reachable(t healthTarget) bool {
	return t.node != nil && t.node.apiUp && t.node.osUp && t.node.cluster == n.cluster
}

// unreachable is the error a check reports for a node it cannot query.
func unreachable(what string, t healthTarget) error {
	return fmt.Errorf("error getting %s from node %q: rpc error: code = Unavailable desc = connection error: "+
		"desc = \"transport: Error while dialing: dial tcp %s:50000: connect: connection refused\"", what, t.Address, t.Address)
}

// healthChecks are Talos's default cluster checks.
func (n *Node) healthChecks() []healthCheck {
	checks := []healthCheck{
		{"etcd to be healthy", n.serviceCheck("etcd")},
		{"etcd members to be consistent across nodes", n.etcdConsistent},
		{"etcd members to be control plane nodes", n.etcdControlPlanes},
		{"apid to be ready", n.apidReady},
		{"all nodes memory sizes", n.apidReady},
		{"all nodes disk sizes", n.apidReady},
		{"no diagnostics", n.apidReady},
		{"kubelet to be healthy", n.serviceCheck("kubelet")},
		{"all nodes to finish boot sequence", n.booted},
	}
	for _, name := range KubernetesChecks() {
		checks = append(checks, healthCheck{name: name, assert: n.kubeCheck(name)})
	}
	return checks
}

// serviceCheck asserts a service runs healthy on every control plane.
func (n *Node) serviceCheck(service string) func(context.Context, []healthTarget) error {
	return func(_ context.Context, targets []healthTarget) error {
		f := n.fleet
		f.mu.Lock()
		defer f.mu.Unlock()
		var errs []error
		for _, t := range targets {
			if !t.ControlPlane {
				continue
			}
			if !n.reachable(t) {
				return unreachable(fmt.Sprintf("service info for service %q", service), t)
			}
			info, ok := t.node.serviceOf(service)
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s: service %q not found", t.Address, service))
			case info.state != "Running":
				errs = append(errs, fmt.Errorf("%s: service %q not in expected state %q: current state [%s] %s", t.Address, service, "Running", info.state, info.msg))
			case !info.healthy:
				errs = append(errs, fmt.Errorf("%s: service is not healthy: %s", t.Address, service))
			}
		}
		return errors.Join(errs...)
	}
}

// etcdConsistent asserts every control plane can list the same members.
func (n *Node) etcdConsistent(_ context.Context, targets []healthTarget) error {
	f := n.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range targets {
		if !t.ControlPlane {
			continue
		}
		if !n.reachable(t) {
			return unreachable("etcd member list", t)
		}
		if err := t.node.cluster.etcd.requireLeader(); err != nil {
			return fmt.Errorf("error getting etcd member list from node %q: %w", t.Address, err)
		}
	}
	return nil
}

// etcdControlPlanes asserts every etcd member is one of the control planes.
func (n *Node) etcdControlPlanes(_ context.Context, targets []healthTarget) error {
	f := n.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := n.cluster.etcd.requireLeader(); err != nil {
		return err
	}
	var cps, members []string
	for _, t := range targets {
		if t.ControlPlane {
			cps = append(cps, t.Address.String())
		}
	}
	ok := true
	for _, m := range n.cluster.etcd.members {
		members = append(members, m.addr.String())
		ok = ok && slices.Contains(cps, m.addr.String())
	}
	if !ok {
		return fmt.Errorf("etcd member ips %q are not subset of control plane node ips %q", members, cps)
	}
	return nil
}

// apidReady asserts every node answers.
func (n *Node) apidReady(_ context.Context, targets []healthTarget) error {
	f := n.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, t := range targets {
		if !n.reachable(t) {
			errs = append(errs, unreachable("version", t))
		}
	}
	return errors.Join(errs...)
}

// booted asserts every node finished booting (stage running).
func (n *Node) booted(_ context.Context, targets []healthTarget) error {
	f := n.fleet
	f.mu.Lock()
	defer f.mu.Unlock()
	byStage := map[string][]string{}
	for _, t := range targets {
		if t.node == nil || !n.reachable(t) {
			return unreachable("machine status", t)
		}
		if s := t.node.stage.String(); s != "running" {
			byStage[s] = append(byStage[s], t.Address.String())
		}
	}
	if len(byStage) == 0 {
		return nil
	}
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(byStage)) {
		parts = append(parts, fmt.Sprintf("%s: %v", s, byStage[s]))
	}
	return fmt.Errorf("nodes are not running: %s", strings.Join(parts, ", "))
}

// kubeCheck delegates a Kubernetes condition to the lab's KubeAPI.
func (n *Node) kubeCheck(name string) func(context.Context, []healthTarget) error {
	return func(ctx context.Context, targets []healthTarget) error {
		c := n.Cluster()
		if c == nil {
			return ErrSkip
		}
		api := c.kubeAPI()
		if api == nil {
			return ErrSkip
		}
		infos := make([]NodeInfo, 0, len(targets))
		for _, t := range targets {
			infos = append(infos, t.NodeInfo)
		}
		return api.Check(ctx, name, infos)
	}
}
