// Package plugin finds tc-* executables on PATH and runs them under the talosc
// plugin contract; it also holds the small SDK plugin binaries are built with.
package plugin

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
