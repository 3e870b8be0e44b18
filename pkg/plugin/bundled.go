package plugin

import (
	"context"
	"errors"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/version"
)

// NotImplementedSuffix ends the message of work a talosc build does not have
// yet: a plugin writes "NOUN" + NotImplementedSuffix, such as "rancher
// registration is not implemented in this talosc build".
const NotImplementedSuffix = " is not implemented in this talosc build"

// Bundled describes a plugin that ships with talosc (tc-rancher, tc-argocd).
// It owns one configuration section named after it, scaffolds that section
// into cluster.yaml and secrets.yaml, validates and activates from the
// section's merged raw value, and leaves converge, destroy, status and check
// to Pending. Spec turns it into the SDK specification.
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
	// Pending implements converge, destroy, status and check.
	Pending Pending
}

// Spec returns the SDK specification of the plugin, versioned like this
// talosc build.
func (b Bundled) Spec() Spec {
	hooks := Hooks{Init: b.init}
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
		Hooks: b.Pending.Hooks(hooks),
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

// Pending is the honest boundary of a plugin whose cluster-side work lands in
// a later talosc build. Until the cluster has a kubeconfig
// (Context.Bootstrapped), converge, destroy, status and check are deferred
// with NeedsKubeconfig, which is not a failure. Afterwards converge, destroy
// and status fail with NotImplemented, and check reports {"ok": false,
// "reason": NotImplemented}.
type Pending struct {
	// NeedsKubeconfig is why the work waits for the first bootstrap, such as
	// "needs the cluster's kubeconfig; run converge once the cluster is up".
	NeedsKubeconfig string
	// NotImplemented says what this build lacks: "NOUN" +
	// NotImplementedSuffix.
	NotImplemented string
}

// Hooks returns h with Converge, Destroy, Status and Check set to p's.
func (p Pending) Hooks(h Hooks) Hooks {
	h.Converge, h.Destroy = p.Change, p.Change
	h.Status, h.Check = p.Status, p.Check
	return h
}

// Change is converge and destroy: deferred (with outputs {"deferred": true})
// until the cluster has a kubeconfig, then a NotImplemented failure.
func (p Pending) Change(_ context.Context, c *Context) (Result, error) {
	if !c.Bootstrapped() {
		return Result{
			Status:   state.StatusDeferred,
			Outputs:  map[string]any{"deferred": true},
			Messages: []string{p.NeedsKubeconfig},
		}, nil
	}
	return Result{}, errors.New(p.NotImplemented)
}

// Status is deferred until the cluster has a kubeconfig, then a
// NotImplemented failure.
func (p Pending) Status(_ context.Context, c *Context) (map[string]any, error) {
	if !c.Bootstrapped() {
		return nil, Defer(p.NeedsKubeconfig)
	}
	return nil, errors.New(p.NotImplemented)
}

// Check is deferred until the cluster has a kubeconfig, then reports
// {"ok": false, "reason": NotImplemented}: nothing can be known to be fine.
func (p Pending) Check(_ context.Context, c *Context) (map[string]any, error) {
	if !c.Bootstrapped() {
		return nil, Defer(p.NeedsKubeconfig)
	}
	return map[string]any{"ok": false, "reason": p.NotImplemented}, nil
}
