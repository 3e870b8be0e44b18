// Package preflight is the validation every converge runs before its first
// mutation (reference §3.1 step 1, I-9, I-1, I-11, I-12): the provider
// inventory, the changes the provider cannot make to existing machines,
// machines cluster.yaml no longer describes, a lost identity, and Talos or
// Kubernetes versions other than the running ones. The first phase of a run
// runs it, so a refusal leaves the cloud untouched; the nodes phase runs
// it again for its inventory.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// versionTimeout bounds each running-version read; an unreachable cluster
// skips the version checks (the nodes phase decides what unreachable means).
const versionTimeout = 10 * time.Second

// Run validates the run against the cloud and the running cluster and
// returns the provider inventory.
func Run(ctx context.Context, in *phase.Input, cloud provider.Cloud) (*provider.Inventory, error) {
	cfg := in.Config
	inv, err := cloud.Inventory(ctx, cfg)
	if err != nil {
		return nil, err
	}
	desired := cfg.Hostnames()
	errs := []error{cloud.ValidateMachines(ctx, cfg, desired, inv)}
	var extra []string
	for _, m := range inv.Machines {
		if !slices.ContainsFunc(desired, func(d config.Machine) bool { return d.Hostname == m.Hostname }) {
			extra = append(extra, m.Hostname)
		}
	}
	if len(extra) > 0 {
		errs = append(errs, fmt.Errorf("%d machine(s) exist that cluster.yaml no longer describes (%s); removing machines is not supported by this talosc build yet: restore the pool counts in cluster.yaml (or destroy the cluster)",
			len(extra), strings.Join(extra, ", ")))
	}
	errs = append(errs, identity.CheckRecoverable(cfg.Dir, inv.Hostnames()))
	if err := errors.Join(errs...); err != nil {
		return inv, err
	}
	return inv, runningVersions(ctx, in)
}

// runningVersions refuses pins other than what the cluster runs: Talos
// through talosconfig's endpoint, Kubernetes through the kubeconfig. A
// cluster that does not answer is skipped (I-11).
func runningVersions(ctx context.Context, in *phase.Input) error {
	cfg := in.Config
	var errs []error
	if path, ok := phase.ClientFile(cfg, config.KubeconfigFile); ok {
		if kc, err := kube.Load(path, kube.Options{Timeout: versionTimeout}); err == nil {
			if up, _ := kc.Probe(ctx, 1, 0); up {
				if v, err := kc.ServerVersion(ctx); err == nil {
					errs = append(errs, CompareVersion("kubernetes", cfg.Kubernetes.Version, v))
				}
			}
		}
	}
	tc, hasTalosconfig := phase.ClientFile(cfg, config.TalosconfigFile)
	ep, ok, _ := identity.ReadTalosconfigEndpoint(tc)
	if !hasTalosconfig || !ok {
		return errors.Join(errs...)
	}
	id, err := identity.Load(filepath.Join(cfg.Dir, identity.FileName))
	if err != nil {
		return errors.Join(errs...) // preflight's identity check already spoke
	}
	c, err := talosapi.Dial(ctx, id, cfg.Name, ep, talosapi.Options{CallTimeout: versionTimeout})
	if err != nil {
		return errors.Join(errs...)
	}
	defer c.Close()
	if v, err := c.Version(ctx, ep); err == nil {
		errs = append(errs, CompareVersion("talos", cfg.Talos.Version, v))
	}
	return errors.Join(errs...)
}

// CompareVersion refuses a pin other than the running version: downgrades
// are never supported (I-11, I-12), upgrades not by this build yet.
func CompareVersion(key, pinned, running string) error {
	p, err1 := config.ParseVersion(pinned)
	v, err2 := config.ParseVersion(running)
	if err1 != nil || err2 != nil {
		return nil
	}
	switch c := p.Compare(v); {
	case c < 0:
		return fmt.Errorf("%s.version %s is older than the running %s; %s downgrades are not supported", key, pinned, running, key)
	case c > 0:
		return fmt.Errorf("%s.version %s is newer than the running %s; upgrades are not supported by this talosc build yet: revert %s.version to %s", key, pinned, running, key, running)
	}
	return nil
}
