package talosc

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/ui"
)

// nodeRow is one line of the nodes table.
type nodeRow struct{ name, role, pool, ready, talos, kube, address, cordoned string }

// printStatus is status's human view: the cluster and its endpoints,
// then one row per node (desired, owned or in Kubernetes), then a line per
// other section; -o yaml holds the details.
func printStatus(w io.Writer, p *ui.Printer, rep Report, cfg *config.Cluster, dir string) {
	var nodes sections.Nodes
	var net sections.Network
	nodesSec, haveNodes := rep.Sections["nodes"]
	nodesRead := haveNodes && decodeReport(nodesSec, &nodes)
	netSec, haveNet := rep.Sections["net"]
	if haveNet {
		decodeReport(netSec, &net)
	}
	fmt.Fprintf(w, "cluster:     %s (%s)\n", rep.Cluster, rep.Provider)
	fmt.Fprintf(w, "kubernetes:  %s\n", orUnknown(nodes.KubernetesEndpoint, net.Kubernetes.Advertised, nodes.Bootstrapped))
	fmt.Fprintf(w, "talos:       %s\n", orUnknown(nodes.TalosEndpoint, "", nodes.Bootstrapped))
	if ing := cmp.Or(net.Ingress.Advertised, addrOrEmpty(net.Ingress.VIP)); ing != "" {
		fmt.Fprintf(w, "ingress:     %s\n", ing)
	}
	if b := nodes.Backup; b != nil {
		fmt.Fprintf(w, "backup:      %s%s\n", b.Summary(), errSuffix(b.Attention))
	}
	fmt.Fprintln(w)
	switch {
	case !haveNodes:
		fmt.Fprintln(w, "nodes: not reported")
	case !nodesRead:
		fmt.Fprintf(w, "nodes: %s%s\n", nodesSec.Status, errSuffix(nodesSec.Error))
	default:
		rows := nodeRows(nodes, cfg)
		table := make([][]string, len(rows))
		for i, r := range rows {
			table[i] = dashes(r.name, r.role, r.pool, r.ready, r.talos, r.kube, r.address, r.cordoned)
		}
		p.Table([]string{"NAME", "ROLE", "POOL", "READY", "TALOS", "KUBERNETES", "ADDRESS", "CORDONED"}, table)
		if !nodes.Up && nodes.Bootstrapped {
			fmt.Fprintln(w, "the Kubernetes API did not answer: readiness and versions are unknown")
		}
	}
	for _, m := range nodesSec.Messages {
		fmt.Fprintf(w, "note: %s\n", m)
	}
	fmt.Fprintln(w)
	for _, name := range rep.Order {
		if name == "nodes" {
			continue
		}
		sec := rep.Sections[name]
		fmt.Fprintf(w, "%-8s %s%s\n", name+":", sec.Status, errSuffix(sec.Error))
		for _, m := range sec.Messages {
			fmt.Fprintf(w, "  note: %s\n", m)
		}
	}
	fmt.Fprintf(w, "\ndetails: kubectl talosc status -C %s -o yaml\n", dir)
}

// nodeRows joins the desired machines, the owned ones and the Kubernetes
// nodes, by name, in name order. What the run could not see reads
// "unknown", never Ready.
func nodeRows(n sections.Nodes, cfg *config.Cluster) []nodeRow {
	// A machine that is not a Node: unknown when the API did not answer,
	// "no node" when it answered without it.
	absent := "unknown"
	if n.Up {
		absent = "no node"
	}
	byName := map[string]*nodeRow{}
	row := func(name string) *nodeRow {
		if r, ok := byName[name]; ok {
			return r
		}
		r := &nodeRow{name: name, ready: absent}
		byName[name] = r
		return r
	}
	if cfg != nil {
		for _, m := range cfg.Hostnames() {
			r := row(m.Hostname)
			r.role, r.pool, r.ready = m.Role, m.Pool, "no machine"
		}
	}
	for _, m := range n.Machines {
		r := row(m.Hostname)
		r.ready = absent
		r.role, r.pool = cmp.Or(r.role, m.Role), cmp.Or(r.pool, m.Pool)
		if m.Address.IsValid() {
			r.address = m.Address.String()
		}
	}
	for _, k := range n.Nodes {
		r := row(k.Name)
		r.ready = "NotReady"
		if k.Ready {
			r.ready = "Ready"
		}
		r.talos = strings.TrimSuffix(strings.TrimPrefix(k.OSImage, "Talos ("), ")")
		r.kube = k.KubeletVersion
		r.address = cmp.Or(k.InternalIP, r.address)
		r.cordoned = "no"
		if k.Unschedulable {
			r.cordoned = "yes"
		}
	}
	out := make([]nodeRow, 0, len(byName))
	for _, r := range byName {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b nodeRow) int {
		return cmp.Or(cmp.Compare(roleOrder(a.role), roleOrder(b.role)), cmp.Compare(a.name, b.name))
	})
	return out
}

// dashes returns cells with "-" for what is not known.
func dashes(cells ...string) []string {
	for i, c := range cells {
		if c == "" {
			cells[i] = "-"
		}
	}
	return cells
}

func roleOrder(role string) int {
	if role == config.RoleControlPlane {
		return 0
	}
	return 1
}

// decodeReport decodes a section's report into v; false when it has none
// or it is not what v reads.
func decodeReport(sec ReportSection, v any) bool {
	return len(sec.Report) > 0 && string(sec.Report) != "null" && json.Unmarshal(sec.Report, v) == nil
}

// orUnknown is the first endpoint known, or why none is.
func orUnknown(first, second string, bootstrapped bool) string {
	if e := cmp.Or(first, second); e != "" {
		return e
	}
	if !bootstrapped {
		return "none yet (not bootstrapped)"
	}
	return "unknown"
}

func errSuffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// addrOrEmpty is a's text, or "" when a is unset.
func addrOrEmpty(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
