package etcdbackup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/live"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// Run is `tc-nodes backup`: the control planes from the provider's
// inventory, a Talos session through talosconfig's endpoint (the one a
// person's talosctl uses), then Take.
func Run(ctx context.Context, in *phase.Input) (sections.Backup, error) {
	cfg := in.Config
	if cfg.Backup == nil {
		return sections.Backup{}, errors.New("no backup section in cluster.yaml: run kubectl talosc backup init, which adds one with a new age recipient")
	}
	id, err := identity.Load(filepath.Join(cfg.Dir, config.TalosSecretsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return sections.Backup{}, fmt.Errorf("%s is missing in %s: there is no cluster to back up (restore one from a bundle instead)", config.TalosSecretsFile, cfg.Dir)
	}
	if err != nil {
		return sections.Backup{}, err
	}
	_, inv, err := in.Inventory(ctx)
	if err != nil {
		return sections.Backup{}, err
	}
	cps := controlPlanes(inv)
	endpoint, err := talosEndpoint(cfg, cps)
	if err != nil {
		return sections.Backup{}, err
	}
	t, err := live.DialTalos(in.Env)(ctx, id, cfg.Name, endpoint)
	if err != nil {
		return sections.Backup{}, err
	}
	defer t.Close()
	o := Options{Config: cfg, Talos: t, ControlPlanes: cps, Cloud: in.ObjectStore}
	if !in.Quiet {
		o.Progress = in.Out.Info
	}
	if path, ok := phase.ClientFile(cfg, config.KubeconfigFile); ok {
		if kc, err := live.OpenKube(in.Env)(path); err == nil {
			o.Kube = kc
		}
	}
	return Take(ctx, o)
}

// controlPlanes are the inventory's control-plane machines, by hostname.
func controlPlanes(inv *provider.Inventory) []provider.Machine {
	var cps []provider.Machine
	for _, m := range inv.Machines {
		if m.Role == config.RoleControlPlane {
			cps = append(cps, m)
		}
	}
	slices.SortFunc(cps, func(a, b provider.Machine) int { return strings.Compare(a.Hostname, b.Hostname) })
	return cps
}

// talosEndpoint is talosconfig's endpoint, else the first control
// plane's address.
func talosEndpoint(cfg *config.Cluster, cps []provider.Machine) (string, error) {
	if path, ok := phase.ClientFile(cfg, config.TalosconfigFile); ok {
		if ep, ok, _ := identity.ReadTalosconfigEndpoint(path); ok {
			return ep, nil
		}
	}
	for _, m := range cps {
		if m.Address.IsValid() {
			return m.Address.String(), nil
		}
	}
	return "", errors.New("no control plane has an address and there is no talosconfig: has converge built the cluster?")
}
