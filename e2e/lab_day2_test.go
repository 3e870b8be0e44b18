package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// etcdMembers checks "lab etcd-members DIR NAME...": the etcd member list
// as talosctl etcd members reads it (EtcdMemberList, local query) on the
// endpoint of DIR's talosconfig, with DIR's identity, is exactly NAMEs.
func etcdMembers(ts *testscript.TestScript, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: lab etcd-members DIR NAME...")
	}
	dir := ts.MkAbs(args[0])
	id, err := identity.Load(filepath.Join(dir, config.TalosSecretsFile))
	ts.Check(err)
	ep, ok, err := identity.ReadTalosconfigEndpoint(filepath.Join(dir, "talosconfig"))
	if err != nil || !ok {
		ts.Fatalf("lab etcd-members: no talosconfig endpoint in %s: %v", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := talosapi.Dial(ctx, id, filepath.Base(dir), ep, talosapi.Options{})
	ts.Check(err)
	defer c.Close()
	members, err := c.EtcdMembers(ctx, ep)
	ts.Check(err)
	var got []string
	for _, m := range members {
		got = append(got, m.Hostname)
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(args[1:])); !slices.Equal(got, want) {
		ts.Fatalf("etcd members on %s: %v, want %v", ep, got, want)
	}
}

// silence makes the Talos node of NAME stop answering ("lab silence
// NAME"): every Version and COSI read of it fails with Unavailable, as a
// node that is down or unreachable would ("lab faults off" ends it).
func (s *scriptLab) silence(ts *testscript.TestScript, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: lab silence NAME")
	}
	addr := s.nodeAddress(ts, args[0])
	var faults []labnet.Fault
	for _, m := range []string{"/machine.MachineService/Version", "/cosi.resource.State/Get", "/machine.MachineService/ApplyConfiguration"} {
		faults = append(faults, labnet.Fault{Service: talosnode.ServiceName, PathPrefix: m + "?node=" + addr, Status: http.StatusServiceUnavailable})
	}
	s.lab.Injector().Set(labnet.Knobs{Faults: faults})
}

// fault fails every request of SERVICE whose path starts with PREFIX
// with STATUS ("lab fault SERVICE PREFIX STATUS"; "lab faults off" ends
// it), e.g. the Kubernetes API's version.
func (s *scriptLab) fault(ts *testscript.TestScript, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: lab fault SERVICE PREFIX STATUS")
	}
	status, err := strconv.Atoi(args[2])
	ts.Check(err)
	s.lab.Injector().Set(labnet.Knobs{Faults: []labnet.Fault{{Service: args[0], PathPrefix: args[1], Status: status}}})
}

// lose loses the answer of one call after it was applied ("lab lose
// SERVICE PREFIX HOW [late]"; "lab faults off" ends it): the first request of
// SERVICE whose path starts with PREFIX ("METHOD /path" takes only METHOD,
// as kill-at call does) is handled by the service, then answered with
// status HOW (e.g. 502, 504), a reset connection (reset), or nothing until
// the client's deadline (hang). With "late" the answer is lost first and
// the service applies the request afterwards (labnet.Fault.Late).
func (s *scriptLab) lose(ts *testscript.TestScript, args []string) {
	if len(args) != 3 && (len(args) != 4 || args[3] != "late") {
		ts.Fatalf("usage: lab lose SERVICE PREFIX STATUS|reset|hang [late]")
	}
	f := labnet.Fault{Service: args[0], PathPrefix: args[1], Nth: 1, After: len(args) == 3, Late: len(args) == 4}
	if m, p, ok := strings.Cut(args[1], " "); ok {
		f.Method, f.PathPrefix = m, p
	}
	switch args[2] {
	case "reset":
		f.Reset = true
	case "hang":
		f.Hang = true
	default:
		status, err := strconv.Atoi(args[2])
		ts.Check(err)
		f.Status = status
	}
	s.lab.Injector().Set(labnet.Knobs{Faults: []labnet.Fault{f}})
}

// awaitLate waits (a minute at most) until the lab applied every late
// request pending, so that what follows sees all they made.
func (s *scriptLab) awaitLate(ts *testscript.TestScript) {
	for deadline := time.Now().Add(time.Minute); s.lab.Injector().Pending() > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			ts.Fatalf("late requests still pending after a minute: %s", strings.Join(s.lab.Injector().Waiting(), "; "))
		}
	}
}

// kubeNodes checks "lab kube-nodes DIR NAME[:K=V[,K=V]...]...": the
// Kubernetes Node objects of DIR's kubeconfig are exactly NAMEs, each
// carrying its labels when given.
func kubeNodes(ts *testscript.TestScript, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: lab kube-nodes DIR NAME[:KEY=VALUE[,KEY=VALUE]...]...")
	}
	kc, err := kube.Load(filepath.Join(ts.MkAbs(args[0]), "kubeconfig"), kube.Options{})
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := kc.Nodes(ctx)
	ts.Check(err)
	var got, want []string
	for _, n := range nodes {
		got = append(got, n.Name)
	}
	for _, a := range args[1:] {
		name, labels, hasLabels := strings.Cut(a, ":")
		want = append(want, name)
		if !hasLabels {
			continue
		}
		i := slices.IndexFunc(nodes, func(n kube.Node) bool { return n.Name == name })
		for label := range strings.SplitSeq(labels, ",") {
			k, v, _ := strings.Cut(label, "=")
			if i < 0 || nodes[i].Labels[k] != v {
				ts.Fatalf("node %s: want label %s=%s, have %v", name, k, v, labelsOf(nodes, i))
			}
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		ts.Fatalf("Kubernetes nodes: %v, want %v", got, want)
	}
}

func labelsOf(nodes []kube.Node, i int) string {
	if i < 0 {
		return "(no such node)"
	}
	return fmt.Sprint(nodes[i].Labels)
}

// cordon runs "lab cordon DIR NAME": marks Node NAME unschedulable through
// DIR's kubeconfig, as an operator's kubectl cordon would.
func cordon(ts *testscript.TestScript, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lab cordon DIR NAME")
	}
	kc, err := kube.Load(filepath.Join(ts.MkAbs(args[0]), "kubeconfig"), kube.Options{})
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts.Check(kc.Cordon(ctx, args[1]))
}

// ownedVIPs checks "lab vips ADDR...": the addresses of the script
// cluster's API VIPs that a control plane owns, so that its API answers
// there, are exactly ADDR....
func (s *scriptLab) ownedVIPs(ts *testscript.TestScript, args []string) {
	var got []string
	for _, v := range s.lab.Status().VIPs {
		if v.Cluster == s.cluster && v.Owner.IsValid() {
			got = append(got, v.Address.String())
		}
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(args)); !slices.Equal(got, want) {
		ts.Fatalf("owned API VIPs of %s: %v, want %v (%+v)", s.cluster, got, want, s.lab.Status().VIPs)
	}
}

// extensions checks "lab extensions DIR NAME EXT...": the system
// extensions Talos node NAME runs, as talosctl get extensions lists them
// (ExtensionStatus over COSI, through DIR's talosconfig endpoint and
// identity), are exactly EXT... (the Image Factory's "schematic" virtual
// extension left out).
func (s *scriptLab) extensions(ts *testscript.TestScript, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: lab extensions DIR NAME EXT...")
	}
	dir := ts.MkAbs(args[0])
	id, err := identity.Load(filepath.Join(dir, config.TalosSecretsFile))
	ts.Check(err)
	ep, ok, err := identity.ReadTalosconfigEndpoint(filepath.Join(dir, "talosconfig"))
	if err != nil || !ok {
		ts.Fatalf("lab extensions: no talosconfig endpoint in %s: %v", dir, err)
	}
	tc, err := identity.Talosconfig(id, s.cluster, ep)
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, client.WithConfig(tc))
	ts.Check(err)
	defer c.Close()
	list, err := safe.StateListAll[*runtime.ExtensionStatus](client.WithNode(ctx, s.nodeAddress(ts, args[1])), c.COSI)
	ts.Check(err)
	var got []string
	for r := range list.All() {
		if name := r.TypedSpec().Metadata.Name; name != "schematic" {
			got = append(got, name)
		}
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(args[2:])); !slices.Equal(got, want) {
		ts.Fatalf("extensions of %s: %v, want %v", args[1], got, want)
	}
}
