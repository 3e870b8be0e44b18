package plugin

import "slices"

// Prefix starts every plugin executable's name.
const Prefix = "tc-"

// Hook names a plugin may implement. Configured and Converge are required.
const (
	HookInit       = "init"
	HookValidate   = "validate"
	HookConfigured = "configured"
	HookConverge   = "converge"
	HookDestroy    = "destroy"
	HookStatus     = "status"
	HookCheck      = "check"
)

// Descriptor is what "tc-NAME describe" prints.
type Descriptor struct {
	Name           string   `json:"name"`
	Version        string   `json:"version"`
	After          []string `json:"after,omitempty"`
	ConfigSections []string `json:"configSections,omitempty"`
	Hooks          []string `json:"hooks"`
	// StateAPIVersions lists the state document versions the plugin reads.
	StateAPIVersions []string `json:"stateAPIVersions"`
}

// Plugin is an installed plugin: where it is and what it says it is.
type Plugin struct {
	Descriptor
	Path string `json:"path"`
}

// Builtins are the compiled-in phase names; tc-<builtin> is never a plugin.
func Builtins() []string { return []string{"image", "net", "nodes"} }

// Reserved are names no plugin may have: "list" is the "plugin list" command.
func Reserved() []string { return []string{"list"} }

// AllHooks lists every hook name a plugin may implement, in lifecycle order.
func AllHooks() []string {
	return []string{HookInit, HookValidate, HookConfigured, HookConverge, HookDestroy, HookStatus, HookCheck}
}

// RequiredHooks lists the hooks every plugin must implement.
func RequiredHooks() []string { return []string{HookConfigured, HookConverge} }

// HookDescribe is the subcommand that prints the Descriptor. It is not a hook:
// every plugin answers it.
const HookDescribe = "describe"

// Implements reports whether the plugin declared hook. Every plugin answers
// "describe".
func (p Plugin) Implements(hook string) bool {
	return hook == HookDescribe || slices.Contains(p.Hooks, hook)
}

// Producer is the state section producer string for the plugin, "tc-NAME/VERSION".
func (d Descriptor) Producer() string {
	if d.Version == "" {
		return Prefix + d.Name
	}
	return Prefix + d.Name + "/" + d.Version
}
