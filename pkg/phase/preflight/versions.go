package preflight

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/compatibility"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/upgrade"
)

// checkVersions refuses, before any mutation, the version pins a converge
// cannot reach from what the cluster runs: a Kubernetes or Talos
// downgrade (I-11, I-12: the highest Talos any node runs counts), a Talos
// release machinery cannot upgrade some node's Talos to, and a Talos
// upgrade that would leave the running Kubernetes unsupported (Talos is
// upgraded before Kubernetes, I-R1). Upgrades are otherwise the nodes
// phase's. A cluster that is not up is not compared.
func (l *view) checkVersions(cfg *config.Cluster) error {
	if !l.up {
		return nil
	}
	kube := upgrade.CheckDowngrade(upgrade.KeyKubernetes, cfg.Kubernetes.Version, l.kubeVersion)
	return errors.Join(kube, l.checkTalos(cfg.Talos.Version))
}

// runningTalos is one Talos version the cluster runs and the nodes
// running it.
type runningTalos struct {
	version config.Version
	hosts   []string
}

// checkTalos checks talos.version against every node's running Talos.
func (l *view) checkTalos(pinned string) error {
	groups, err := l.talosByVersion()
	if err != nil {
		return err
	}
	if err := upgrade.CheckDowngrade(upgrade.KeyTalos, pinned, groups[len(groups)-1].version.String()); err != nil {
		return err
	}
	target, err := config.ParseVersion(pinned)
	if err != nil {
		return fmt.Errorf("talos.version: %w", err)
	}
	pin, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: target.String()})
	if err != nil {
		return fmt.Errorf("talos.version %s: %w", target, err)
	}
	var errs []error
	upgrading := false
	for _, g := range groups {
		if g.version.Compare(target) == 0 {
			continue
		}
		upgrading = true
		host, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: g.version.String()})
		if err == nil {
			err = pin.UpgradeableFrom(host)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("talos.version %s cannot be installed on %s (running %s): %w; upgrade through an intermediate Talos release first (set talos.version to one that upgrades from %s, converge, then set %s)",
				target, strings.Join(g.hosts, ", "), g.version, err, g.version, target))
		}
	}
	if upgrading {
		errs = append(errs, kubernetesSupported(l.kubeVersion, target, pin, groups[0].version))
	}
	return errors.Join(errs...)
}

// talosByVersion groups the nodes by the Talos version they run, lowest
// first. A version that does not parse refuses: the checks cannot decide.
func (l *view) talosByVersion() ([]runningTalos, error) {
	if len(l.talos) == 0 {
		return nil, errors.New("the cluster is up but no node's Talos version was read; refusing: the running Talos version is unknown")
	}
	var groups []runningTalos
	for _, n := range l.talos {
		v, err := config.ParseVersion(n.version)
		if err != nil {
			return nil, fmt.Errorf("the Talos API of %s reports version %q (%w); refusing: the running Talos version is unknown", n.host, n.version, err)
		}
		i := slices.IndexFunc(groups, func(g runningTalos) bool { return g.version.Compare(v) == 0 })
		if i < 0 {
			groups, i = append(groups, runningTalos{version: v}), len(groups)
		}
		groups[i].hosts = append(groups[i].hosts, n.host)
	}
	slices.SortFunc(groups, func(a, b runningTalos) int { return a.version.Compare(b.version) })
	return groups, nil
}

// kubernetesSupported refuses a Talos upgrade to target whose Talos does
// not support the Kubernetes the cluster runs: Talos goes first (I-R1),
// so nodes would run an unsupported pair until the Kubernetes upgrade.
// The fix quotes what the lowest running Talos supports.
func kubernetesSupported(kubeVersion string, target config.Version, pin *compatibility.TalosVersion, lowest config.Version) error {
	kv, err := compatibility.ParseKubernetesVersion(kubeVersion)
	if err != nil {
		return fmt.Errorf("the cluster's kubernetes version %q: %w; refusing: it cannot be checked against talos.version %s", kubeVersion, err, target)
	}
	err = kv.SupportedWith(pin)
	if err == nil {
		return nil
	}
	supports := fmt.Sprintf("does not support it (%v)", err)
	if oldest, newest, ok := config.KubernetesSupport(target); ok {
		supports = fmt.Sprintf("supports Kubernetes %s to %s", oldest, newest)
	}
	fix := "first upgrade Kubernetes within the running Talos"
	if lo, hi, ok := config.KubernetesSupport(lowest); ok {
		fix += fmt.Sprintf(" %s (it supports %s to %s), then raise talos.version", lowest, lo, hi)
	}
	return fmt.Errorf("kubernetes %s runs on this cluster but talos.version %s %s: %s", kubeVersion, target, supports, fix)
}
