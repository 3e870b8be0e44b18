package plugin

import (
	"context"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/version"
)

// Bundled describes a plugin that ships with talosc (tc-rancher, tc-argocd).
// It owns one configuration section named after it, scaffolds that section
// into cluster.yaml and secrets.yaml, validates and activates from the
// section's merged raw value, and does its work with Work's hooks. Spec
// turns it into the SDK specification.
type Bundled struct {
	// Name is the plugin name and its configuration section.
	Name string
	// After lists the plugins that run before this one.
	After []string
	// Short is the one-line help of the binary.
	Short string
	// ClusterScaffold and SecretsScaffold are the snippets "talosc init"
	// appends to cluster.yaml and secrets.yaml; an empty one is left out.
	ClusterScaffold, SecretsScaffold string
	// Validate returns the problems of the merged section (nil when it is
	// absent), each "key.path: message". Nil means no validate hook.
	Validate func(section any) []string
	// Configured reports whether the merged section activates the plugin. It
	// is required.
	Configured func(section any) bool
	// Work holds the plugin's Converge, Destroy, Status and Check (its
	// other hooks are ignored).
	Work Hooks
}

// Spec returns the SDK specification of the plugin, versioned like this
// talosc build.
func (b Bundled) Spec() Spec {
	hooks := Hooks{Init: b.init, Converge: b.Work.Converge, Destroy: b.Work.Destroy, Status: b.Work.Status, Check: b.Work.Check}
	if b.Validate != nil {
		hooks.Validate = func(_ context.Context, c *Context) []string { return b.Validate(c.Section[b.Name]) }
	}
	if b.Configured != nil {
		hooks.Configured = func(_ context.Context, c *Context) (bool, error) { return b.Configured(c.Section[b.Name]), nil }
	}
	return Spec{
		Descriptor: Descriptor{
			Name:           b.Name,
			Version:        version.Version(),
			After:          b.After,
			ConfigSections: []string{b.Name},
		},
		Short: b.Short,
		Hooks: hooks,
	}
}

// init is the init hook: the scaffold snippets that are not empty.
func (b Bundled) init(context.Context, *Context) ([]InitSection, error) {
	var sections []InitSection
	for _, s := range []InitSection{
		{Name: b.Name, File: config.ClusterFile, YAML: b.ClusterScaffold},
		{Name: b.Name, File: config.SecretsFile, YAML: b.SecretsScaffold},
	} {
		if s.YAML != "" {
			sections = append(sections, s)
		}
	}
	return sections, nil
}
