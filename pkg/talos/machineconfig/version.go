package machineconfig

import (
	"errors"
	"fmt"

	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/upgrade"
)

// Contract bounds. The oldest is the oldest Talos release talosc accepts
// (the first row of pkg/config's support matrix: talos.version below
// v1.13.0 is refused at load, and TestContractFloorMatchesLoader keeps the
// two in step). The newest is the machinery release talosc is built with
// (github.com/siderolabs/talos/pkg/machinery v1.14.1), which cannot write
// configs for a newer Talos.
func oldestContract() *talosconfig.VersionContract { return talosconfig.TalosVersion1_13 }

func newestContract() *talosconfig.VersionContract { return talosconfig.TalosVersion1_14 }

// ContractFor returns the Talos config contract to generate a node's
// configuration with, from the Talos version the node runs (existing nodes)
// or will install (new nodes). Up to v1.13 configs keep Kubernetes and
// install settings in the v1alpha1 document; from v1.14 they use the typed
// documents (KubeNodeConfig, KubeletConfig, UnattendedInstallConfig, ...).
// Versions outside what talosc can generate are refused.
func ContractFor(talosVersion string) (*talosconfig.VersionContract, error) {
	v, err := config.ParseVersion(talosVersion)
	if err != nil {
		return nil, fmt.Errorf("talos version: %w", err)
	}
	contract, err := talosconfig.ParseContractFromVersion(v.String())
	if err != nil {
		return nil, fmt.Errorf("talos version %s: %w", v, err)
	}
	if oldest := oldestContract(); oldest.Greater(contract) {
		return nil, fmt.Errorf("talos version %s is older than %s, the oldest Talos talosc generates machine configs for; upgrade the node with the reference tool first", v, oldest)
	}
	if newest := newestContract(); contract.Greater(newest) {
		return nil, fmt.Errorf("talos version %s is newer than %s, the newest Talos this talosc can generate machine configs for; upgrade talosc", v, newest)
	}
	return contract, nil
}

// ErrUnknownRunningKubernetes is returned by KubernetesVersion when an
// existing node's configuration would be generated without knowing the
// Kubernetes version the cluster runs (invariant I-13).
var ErrUnknownRunningKubernetes = errors.New("could not determine the running cluster's kubernetes version while the kube-api is up; " +
	"refusing to generate machine configs against an unknown version " +
	"(a config at the target version would upgrade kubelets by config push and skip Kubernetes minors); " +
	"check that the kube-api answers and re-run")

// KubeVersionQuery says which Kubernetes version a node's config is for.
type KubeVersionQuery struct {
	// Target is kubernetes.version from cluster.yaml.
	Target string
	// Running is the version the cluster runs, as read from the kube-api;
	// empty when it could not be read (or there is no cluster yet).
	Running string
	// Existing is true for a node that already exists: its config carries
	// the running version, so `upgrade-k8s` steps through every minor.
	Existing bool
	// DryRunWithoutKubeconfig is the one exception to I-13: a dry run with
	// no non-empty kubeconfig on disk cannot read the running version and
	// keeps the target so that plan completes (it writes nothing).
	DryRunWithoutKubeconfig bool
}

// KubernetesVersion picks the Kubernetes version baked into a node's
// config: the running version for existing nodes, the target for new ones.
// It refuses to guess an existing node's version (I-13) unless the caller
// is a dry run without a kubeconfig, and refuses a target older than the
// running version (Kubernetes downgrades are not supported). The result is
// normalised to vMAJOR.MINOR.PATCH.
func KubernetesVersion(q KubeVersionQuery) (string, error) {
	target, err := config.ParseVersion(q.Target)
	if err != nil {
		return "", fmt.Errorf("kubernetes.version: %w", err)
	}
	if q.Running == "" {
		if q.Existing && !q.DryRunWithoutKubeconfig {
			return "", ErrUnknownRunningKubernetes
		}
		return target.String(), nil
	}
	running, err := config.ParseVersion(q.Running)
	if err != nil {
		return "", fmt.Errorf("running kubernetes version: %w", err)
	}
	if target.Compare(running) < 0 {
		return "", &upgrade.DowngradeError{Key: upgrade.KeyKubernetes, Pinned: target.String(), Running: running.String()}
	}
	if q.Existing {
		return running.String(), nil
	}
	return target.String(), nil
}
