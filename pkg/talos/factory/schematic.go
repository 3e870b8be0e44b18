package factory

import (
	"fmt"
	"slices"
	"strings"

	ifschematic "github.com/siderolabs/image-factory/pkg/schematic"

	"github.com/talosc/talosc/pkg/config"
)

// Official extensions talosc bakes into its images.
const (
	// ExtensionTailscale is the Tailscale system extension. The boot image
	// always carries it; installer images keep it only when cluster.yaml has
	// a tailscale section or lists it in talos.extensions or a pool.
	ExtensionTailscale = "siderolabs/tailscale"
	// ExtensionQEMUGuestAgent is the QEMU guest agent system extension, in
	// every VM image (boot and installer).
	ExtensionQEMUGuestAgent = "siderolabs/qemu-guest-agent"
)

// ControlPlanePool is the pool name of the control plane in ExtensionSet and
// the installer plan.
const ControlPlanePool = "controlplane"

// Schematic is an Image Factory schematic restricted to what talosc uses: a
// set of official system extensions, kept sorted and free of duplicates so
// equal sets have equal ids. The zero value is the empty schematic.
type Schematic struct {
	extensions []string
}

// SchematicFor returns the schematic that installs exts (official extension
// names such as "siderolabs/iscsi-tools"). Names are trimmed, empty names
// dropped, duplicates removed and the result sorted; exts is not modified.
func SchematicFor(exts []string) Schematic {
	return Schematic{extensions: normalise(exts)}
}

// BaseSchematic returns the boot image's schematic: the Tailscale and QEMU
// guest agent extensions. One boot image per Talos version serves every
// node; the installer image then adds or drops extensions per pool.
func BaseSchematic() Schematic {
	return SchematicFor([]string{ExtensionTailscale, ExtensionQEMUGuestAgent})
}

// Extensions returns a copy of the schematic's sorted extension names.
func (s Schematic) Extensions() []string {
	return slices.Clone(s.extensions)
}

// Marshal returns the schematic document in the Image Factory's canonical
// YAML form: the request body of POST /schematics and the input of ID.
func (s Schematic) Marshal() ([]byte, error) {
	doc := s.upstream()
	data, err := doc.Marshal()
	if err != nil {
		return nil, fmt.Errorf("marshal schematic %v: %w", s.extensions, err)
	}
	return data, nil
}

// ID returns the schematic id, the hex SHA-256 of the canonical YAML, exactly
// as the Image Factory computes it.
func (s Schematic) ID() (string, error) {
	doc := s.upstream()
	id, err := doc.ID()
	if err != nil {
		return "", fmt.Errorf("schematic id for %v: %w", s.extensions, err)
	}
	return id, nil
}

// upstream converts s to the Image Factory's own type, so the serialisation
// (and therefore the id) follows upstream field order and omitempty rules.
func (s Schematic) upstream() ifschematic.Schematic {
	return ifschematic.Schematic{Customization: ifschematic.Customization{
		SystemExtensions: ifschematic.SystemExtensions{OfficialExtensions: slices.Clone(s.extensions)},
	}}
}

// ExtensionSet returns the resolved, sorted, duplicate-free extensions of the
// installer image for pool ("controlplane" or a worker pool name): the QEMU
// guest agent; Tailscale when cfg has a tailscale section (an explicit
// siderolabs/tailscale in talos.extensions or the pool's extensions keeps it
// too); talos.extensions; the pool's extensions. An unknown pool is an
// error, never silently the cluster-wide set.
func ExtensionSet(cfg *config.Cluster, pool string) ([]string, error) {
	p, err := lookupPool(cfg, pool)
	if err != nil {
		return nil, err
	}
	exts := []string{ExtensionQEMUGuestAgent}
	if cfg.Tailscale != nil {
		exts = append(exts, ExtensionTailscale)
	}
	exts = append(exts, cfg.Talos.Extensions...)
	exts = append(exts, p.Extensions...)
	return normalise(exts), nil
}

// lookupPool finds pool in cfg.
func lookupPool(cfg *config.Cluster, pool string) (config.Pool, error) {
	if cfg == nil {
		return config.Pool{}, fmt.Errorf("extension set for pool %q: no cluster configuration", pool)
	}
	if pool == ControlPlanePool {
		return cfg.ControlPlane, nil
	}
	if p, ok := cfg.Workers.Lookup(pool); ok {
		return p, nil
	}
	return config.Pool{}, fmt.Errorf("extension set: pool %q is neither %q nor a worker pool of cluster %q",
		pool, ControlPlanePool, cfg.Name)
}

// normalise trims, drops empties, dedupes and sorts extension names into a
// new slice (never nil, so an empty set compares equal to another).
func normalise(exts []string) []string {
	out := make([]string, 0, len(exts))
	for _, e := range exts {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
