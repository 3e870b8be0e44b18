package nodes

import (
	"context"
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/releases"
)

// Check compares the pinned versions with the newest releases and with the
// running nodes, and reports drift and cordons. It needs no provider
// credentials: Talos releases come from the Image Factory, Kubernetes
// releases from the kubelet image repository, the running versions from the
// kubeconfig.
func (Phase) Check(ctx context.Context, in *phase.Input) (phase.Report, error) {
	var rep phase.Report
	cfg := in.Config
	talos := phase.Finding{Name: "talos", Configured: cfg.Talos.Version}
	if fc, err := in.Factory(nil); err != nil {
		rep.Incomplete = append(rep.Incomplete, err.Error())
	} else if versions, err := fc.Versions(ctx); err != nil {
		rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("talos releases: %v", err))
	} else {
		talos.Observed, talos.Attention = newest(cfg.Talos.Version, versions)
	}
	kubernetes := phase.Finding{Name: "kubernetes", Configured: cfg.Kubernetes.Version}
	if versions, err := releases.KubernetesVersions(ctx, nil, in.Config.KubeletRepositoryURL()); err != nil {
		rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("kubernetes releases: %v", err))
	} else {
		kubernetes.Observed, kubernetes.Attention = newest(cfg.Kubernetes.Version, versions)
	}
	rep.Items = append(rep.Items, talos, kubernetes)
	if f, ok := metadataFinding(cfg); ok {
		rep.Items = append(rep.Items, f)
	}
	path, ok := phase.ClientFile(cfg, config.KubeconfigFile)
	if !ok {
		rep.Incomplete = append(rep.Incomplete, "no kubeconfig yet (has converge run?); no node versions known")
		return finish(rep), nil
	}
	kc, err := kube.Load(path, kube.Options{})
	if err != nil {
		rep.Incomplete = append(rep.Incomplete, err.Error())
		return finish(rep), nil
	}
	nodes, err := kc.Nodes(ctx)
	if err != nil {
		rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("cluster unreachable; no node versions known: %v", err))
		return finish(rep), nil
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n.Name] = true
		rep.Items = append(rep.Items, nodeFinding(cfg, n))
	}
	for _, m := range cfg.Hostnames() {
		if !seen[m.Hostname] {
			rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("%s is configured but not a Kubernetes node", m.Hostname))
		}
	}
	return finish(rep), nil
}

// newest describes the newest release of the pinned minor and overall, and
// what needs attention.
func newest(pinned string, versions []string) (observed, attention string) {
	p, err := config.ParseVersion(pinned)
	if err != nil {
		return "", ""
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
	observed = fmt.Sprintf("latest patch %s, latest %s", latestPatch, latest)
	var need []string
	if latestPatch.Compare(p) > 0 {
		need = append(need, "patch "+latestPatch.String()+" available")
	}
	if latest.Major != p.Major || latest.Minor != p.Minor {
		need = append(need, "minor "+latest.MinorString()+" available")
	}
	return observed, strings.Join(need, ", ")
}

// nodeFinding reports one node's running versions against the pins.
func nodeFinding(cfg *config.Cluster, n kube.Node) phase.Finding {
	f := phase.Finding{
		Name:       "node " + n.Name,
		Configured: fmt.Sprintf("talos %s, kubernetes %s", cfg.Talos.Version, cfg.Kubernetes.Version),
		Observed:   fmt.Sprintf("talos %s, kubernetes %s", n.TalosVersion(), n.KubeletVersion),
	}
	var need []string
	if n.TalosVersion() != cfg.Talos.Version || n.KubeletVersion != cfg.Kubernetes.Version {
		need = append(need, "drift")
	}
	if n.Unschedulable {
		need = append(need, "cordoned (SchedulingDisabled)")
	}
	if !n.Ready {
		need = append(need, "not Ready")
	}
	f.Attention = strings.Join(need, ", ")
	return f
}

func finish(rep phase.Report) phase.Report {
	rep.OK = len(rep.Incomplete) == 0
	for _, it := range rep.Items {
		if it.Attention != "" {
			rep.OK = false
		}
	}
	return rep
}
