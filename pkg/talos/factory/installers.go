package factory

import (
	"fmt"

	"github.com/talosc/talosc/pkg/config"
)

// Installer is one installer image: a distinct resolved extension set and
// the pools that use it.
type Installer struct {
	// Schematic is the installer's schematic.
	Schematic Schematic
	// SchematicID is Schematic's id.
	SchematicID string
	// Ref is the installer image reference machine configs install from.
	Ref string
	// Pools lists the pools using this installer, control plane first, then
	// worker pools in file order.
	Pools []string
}

// InstallerPlan maps every pool of a cluster to its installer image.
type InstallerPlan struct {
	// ByPool maps each pool name ("controlplane" and every worker pool) to
	// its installer reference; pools with identical extension sets share one.
	ByPool map[string]string
	// Installers are the distinct installer images, in order of first use
	// (control plane first, then worker pools in file order).
	Installers []Installer
}

// InstallerOptions selects the installer flavour.
type InstallerOptions struct {
	// Host is the registry host, see RegistryHost ("factory.talos.dev").
	Host string
	// Platform is PlatformOpenStack or PlatformNoCloud, see PlatformFor.
	Platform string
	// SecureBoot selects the "-secureboot" installers.
	SecureBoot bool
}

// Installers resolves every pool's extension set (see ExtensionSet) at
// cfg.Talos.Version and returns one installer per distinct set.
func Installers(cfg *config.Cluster, opts InstallerOptions) (*InstallerPlan, error) {
	if opts.Host == "" || opts.Platform == "" {
		return nil, fmt.Errorf("installer images: registry host %q and platform %q must both be set", opts.Host, opts.Platform)
	}
	if cfg == nil || cfg.Talos.Version == "" {
		return nil, fmt.Errorf("installer images: talos.version is not set")
	}
	pools := []string{ControlPlanePool}
	for _, p := range cfg.Workers {
		pools = append(pools, p.Name)
	}
	plan := &InstallerPlan{ByPool: make(map[string]string, len(pools))}
	byID := map[string]int{}
	for _, pool := range pools {
		exts, err := ExtensionSet(cfg, pool)
		if err != nil {
			return nil, err
		}
		s := SchematicFor(exts)
		id, err := s.ID()
		if err != nil {
			return nil, fmt.Errorf("installer image for pool %q: %w", pool, err)
		}
		i, ok := byID[id]
		if !ok {
			i = len(plan.Installers)
			byID[id] = i
			plan.Installers = append(plan.Installers, Installer{
				Schematic:   s,
				SchematicID: id,
				Ref:         InstallerRef(opts.Host, opts.Platform, id, cfg.Talos.Version, opts.SecureBoot),
			})
		}
		plan.Installers[i].Pools = append(plan.Installers[i].Pools, pool)
		plan.ByPool[pool] = plan.Installers[i].Ref
	}
	return plan, nil
}

// Schematics returns the distinct schematics the plan needs, so a caller
// can register each with the factory once.
func (p *InstallerPlan) Schematics() []Schematic {
	out := make([]Schematic, 0, len(p.Installers))
	for _, in := range p.Installers {
		out = append(out, in.Schematic)
	}
	return out
}
