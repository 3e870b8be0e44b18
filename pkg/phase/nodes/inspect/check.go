// Package inspect is the nodes phase's read-only reports, which change
// nothing and run no converge: check (the pinned versions against the
// releases and the running nodes, the client certificates, the cluster
// metadata, orphaned machines) and status (the owned machines and the
// nodes).
package inspect

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/backup"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/live"
	"github.com/talosc/talosc/pkg/releases"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// Check compares the pinned versions with the newest releases and with the
// running nodes, and reports drift and cordons. It needs no provider
// credentials: Talos releases come from the Image Factory, Kubernetes
// releases from the kubelet image repository, the running versions from the
// kubeconfig, etcd's hygiene through talosconfig's endpoint (etcd).
func Check(ctx context.Context, in *phase.Input) (phase.Report, error) {
	var rep checkReport
	cfg := in.Config
	talos := phase.Finding{Name: "talos", Configured: cfg.Talos.Version}
	if fc, err := factory.ForCluster(in.Config, nil); err != nil {
		rep.Incomplete = append(rep.Incomplete, err.Error())
	} else if versions, err := fc.Versions(ctx); err != nil {
		rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("talos releases: %v", err))
	} else if c, ok := newest("talos", cfg.Talos.Version, versions); ok {
		rep.addComponent(&talos, c)
	}
	kubernetes := phase.Finding{Name: "kubernetes", Configured: cfg.Kubernetes.Version}
	if versions, err := releases.KubernetesVersions(ctx, nil, in.Config.KubeletRepositoryURL()); err != nil {
		rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("kubernetes releases: %v", err))
	} else if c, ok := newest("kubernetes", cfg.Kubernetes.Version, versions); ok {
		rep.addComponent(&kubernetes, c)
	}
	rep.Items = append(rep.Items, talos, kubernetes)
	if f, ok := metadataFinding(cfg); ok {
		rep.Items = append(rep.Items, f)
	}
	rep.certificates(cfg, time.Now(), in.ExpiryWarning)
	if b := backup.Check(ctx, cfg, in.ObjectStore, time.Now()); b != nil {
		rep.Backup = b
		rep.Items = append(rep.Items, backupFinding(b, cfg.Dir))
	}
	rep.orphans(ctx, in)
	rep.etcd(ctx, cfg, live.DialTalos(in.Env))
	path, ok := phase.ClientFile(cfg, config.KubeconfigFile)
	if !ok {
		rep.Incomplete = append(rep.Incomplete, "no kubeconfig yet (has converge run?); no node versions known")
		return rep.finish(), nil
	}
	kc, err := kube.Load(path, kube.Options{})
	if err != nil {
		rep.Incomplete = append(rep.Incomplete, err.Error())
		return rep.finish(), nil
	}
	nodes, err := kc.Nodes(ctx)
	if err != nil {
		rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("cluster unreachable; no node versions known: %v", err))
		return rep.finish(), nil
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n.Name] = true
		item, node := nodeFinding(cfg, n)
		rep.Items = append(rep.Items, item)
		rep.Nodes = append(rep.Nodes, node)
	}
	for _, m := range cfg.Hostnames() {
		if !seen[m.Hostname] {
			rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("%s is configured but not a Kubernetes node", m.Hostname))
		}
	}
	return rep.finish(), nil
}

// newest compares the pinned version with the releases: the newest
// release of the pinned minor and overall. A pin that does not parse has
// nothing to compare (ok false).
func newest(name, pinned string, versions []string) (report.Component, bool) {
	p, err := config.ParseVersion(pinned)
	if err != nil {
		return report.Component{}, false
	}
	latestPatch, latest := p, p
	for _, s := range versions {
		v, err := config.ParseVersion(s)
		if err != nil || strings.HasPrefix(v.Suffix, "-") {
			continue
		}
		if v.Major == p.Major && v.Minor == p.Minor && v.Compare(latestPatch) > 0 {
			latestPatch = v
		}
		if v.Compare(latest) > 0 {
			latest = v
		}
	}
	c := report.Component{
		Component: name, Configured: pinned, LatestPatch: latestPatch.String(), Latest: latest.String(),
		PatchAvailable: latestPatch.Compare(p) > 0,
		MinorAvailable: latest.Major != p.Major || latest.Minor != p.Minor,
	}
	c.UpToDate = !c.PatchAvailable && !c.MinorAvailable
	return c, true
}

// checkReport is the nodes phase's check report as it is made.
type checkReport struct{ phase.Report }

// addComponent records c and describes it in f.
func (rep *checkReport) addComponent(f *phase.Finding, c report.Component) {
	rep.Components = append(rep.Components, c)
	f.Observed = fmt.Sprintf("latest patch %s, latest %s", c.LatestPatch, c.Latest)
	var need []string
	if c.PatchAvailable {
		need = append(need, "patch "+c.LatestPatch+" available")
	}
	if c.MinorAvailable {
		v, _ := config.ParseVersion(c.Latest)
		need = append(need, "minor "+v.MinorString()+" available")
	}
	f.Attention = strings.Join(need, ", ")
	f.Fix = componentFix(c)
}

// componentFix is how a pinned component that is behind is brought up:
// the newest patch of the pinned minor first, else the next minor.
func componentFix(c report.Component) string {
	key := c.Component + ".version"
	switch {
	case c.PatchAvailable:
		return fmt.Sprintf("set %s: %s in cluster.yaml, then kubectl talosc plan and converge", key, c.LatestPatch)
	case c.MinorAvailable:
		return fmt.Sprintf("raise %s towards %s in cluster.yaml (kubectl talosc plan shows the rollout), then converge", key, c.Latest)
	}
	return ""
}

// nodeFinding reports one node's running versions against the pins.
func nodeFinding(cfg *config.Cluster, n kube.Node) (phase.Finding, report.Node) {
	f := phase.Finding{
		Name:       "node " + n.Name,
		Configured: fmt.Sprintf("talos %s, kubernetes %s", cfg.Talos.Version, cfg.Kubernetes.Version),
		Observed:   fmt.Sprintf("talos %s, kubernetes %s", n.TalosVersion(), n.KubeletVersion),
	}
	node := report.Node{
		Name: n.Name, Talos: n.TalosVersion(), Kubernetes: n.KubeletVersion, Cordoned: n.Unschedulable, Ready: n.Ready,
		Drift: n.TalosVersion() != cfg.Talos.Version || n.KubeletVersion != cfg.Kubernetes.Version,
	}
	var need []string
	if node.Drift {
		need = append(need, "drift")
	}
	if n.Unschedulable {
		need = append(need, "cordoned (SchedulingDisabled)")
	}
	if !n.Ready {
		need = append(need, "not Ready")
	}
	f.Attention = strings.Join(need, ", ")
	f.Fix = nodeFix(n.Name, node)
	return f, node
}

// nodeFix is what brings a node back in line: converge rolls the pinned
// versions out and lifts leftover cordons; a node that is not Ready
// needs a look first.
func nodeFix(name string, n report.Node) string {
	var fix []string
	switch {
	case n.Drift && n.Cordoned:
		fix = append(fix, "kubectl talosc converge (rolls the pinned versions out, lifts the cordon)")
	case n.Drift:
		fix = append(fix, "kubectl talosc converge (rolls the pinned versions out)")
	case n.Cordoned:
		fix = append(fix, "kubectl talosc converge (lifts the leftover cordon)")
	}
	if !n.Ready {
		fix = append([]string{"look at the node first: kubectl describe node " + name + " (converge refuses to roll out onto an unhealthy cluster)"}, fix...)
	}
	return strings.Join(fix, "; then ")
}

// finish decides OK: complete and nothing needs attention.
func (rep *checkReport) finish() phase.Report {
	rep.OK = len(rep.Incomplete) == 0
	for _, it := range rep.Items {
		if it.Attention != "" {
			rep.OK = false
		}
	}
	return rep.Report
}
