// Package plugin finds tc-* executables on PATH and runs them under the talosc
// plugin contract; it also holds the small SDK plugin binaries are built with.
//
// # Discovery
//
// A plugin is any executable file called tc-NAME in a directory on PATH whose
// NAME is not a builtin phase (see Builtins). Discover applies these rules:
//   - only absolute PATH entries are searched; an executable found through an
//     empty or relative entry ("", ".", "bin") is never run (the exec.ErrDot
//     rule), and a warning names it;
//   - the first tc-NAME on PATH wins; a later one is reported with both paths;
//   - "list" is reserved (it is "plugin list") and refused with a warning;
//   - non-executable files, directories and names that are not lowercase
//     letters, digits and "-" are ignored;
//   - "tc-NAME describe" is run on each (in parallel); a plugin whose describe
//     fails, crashes, times out or prints no valid descriptor is skipped with a
//     warning, as is one that lacks a required hook (configured, converge) or
//     does not read this build's state apiVersion. A descriptor whose name
//     differs from NAME is warned about and NAME is used.
//
// Discover returns the plugins in run order (see Order): a topological sort
// over each descriptor's After list (names that are not installed are
// ignored), alphabetical within a tier; a cycle is reported and the remaining
// plugins run alphabetically.
//
// # Protocol
//
// "tc-NAME describe" prints the Descriptor as one JSON object on stdout and
// exits 0.
//
// "tc-NAME HOOK [--dry-run] [--yes]", for HOOK one of init, validate,
// configured, converge, destroy, status and check, reads a state document
// (package state) on stdin and writes one on stdout in which only the section
// called NAME may differ from the input; every other section, the cluster name
// and the action are copied through untouched. stderr is for humans (the front
// door prefixes each line with "[NAME] "). An empty stdin starts a new
// document. What the section carries, by hook:
//
//   - init: Outputs {"sections": [{"name", "file", "yaml"}, ...]}: YAML snippets
//     the front door appends to file (relative to the cluster directory) when
//     that file has no top-level key name yet. A snippet always has its
//     top-level key (so a second init appends nothing); to scaffold without
//     activating anything, comment out everything under it: the key then
//     holds null, which the loader reads as absent;
//   - validate: status succeeded, or failed with Error.Problems listing each
//     problem as "key.path: message" (exit 2);
//   - configured: Outputs {"configured": bool};
//   - converge (with --dry-run for "plan") and destroy: status succeeded,
//     planned, deferred (the work needs something that does not exist yet, such
//     as the cluster's kubeconfig; not a failure), skipped (for example "not
//     configured; nothing to do") or failed; Outputs are the plugin's result
//     and Plan the changes made (or, planned, that would be made), which the
//     front door renders and counts with the phases';
//   - status: Outputs are the report object;
//   - check: Outputs are the report object, carrying "ok": bool. The hook
//     exits 0 whenever it produced a report; "ok" decides whether the cluster
//     needs attention.
//
// Exit codes: 0 success (including deferred and skipped), 1 failure, 2 invalid
// configuration or a validate refusal. The section is written in every case
// where a document can be written at all.
//
// # Environment
//
// The front door sets these for every phase and plugin (the Env* constants):
// TALOSC_PATH (the front door's path), TALOSC_DIR (absolute cluster
// directory), TALOSC_CONFIG (absolute cluster.yaml), TALOSC_STATE_API
// (state.APIVersion), TALOSC_PLUGIN_NAME (set by Runner), TALOSC_PLUGIN_SECTIONS
// (comma-separated "section=plugin" for every installed plugin's config
// sections, so cluster.yaml can be loaded strictly without rediscovering
// plugins), TALOSC_KUBECONFIG and TALOSC_TALOSCONFIG (client file paths, which
// may not exist yet) and TALOSC_PLUGIN_TIMEOUT (a Go duration that overrides
// every hook timeout; meant for tests). NO_COLOR is passed through.
//
// # Invocation
//
// Runner.Call runs one hook with a timeout, in its own process group (killed
// as a whole on timeout or cancellation), and refuses output that is not a
// state document, that changes a section the plugin does not own, or that
// lacks the plugin's own section. Runner.RunAll runs a hook over plugins in
// order, feeding each the document the previous one produced, and contains
// failures: a failing plugin's section is recorded as failed and the others
// still run. A plugin that does not implement an optional hook is not run and
// gets no section.
//
// # SDK
//
// NewCommand builds a plugin binary's root command from a Spec: a Descriptor
// and the Hooks it implements. It handles the state document, loading
// cluster.yaml strictly (with every installed plugin's sections), the
// "configured" gate, the section and the exit codes, so a plugin only
// implements its hooks. A hook may return Defer(reason) (or, for converge and
// destroy, a Result with status deferred) when its work must wait, typically
// for the cluster's kubeconfig (Context.Bootstrapped). Converge and destroy
// run the Validate hook first; converge, destroy, status and check run only
// when Configured says so and otherwise record "not configured; nothing to
// do" as skipped.
//
// Bundled builds the Spec of a plugin shipped with talosc (tc-rancher,
// tc-argocd): one configuration section named after the plugin, scaffolded
// into cluster.yaml and secrets.yaml and checked by functions of its merged
// raw value, with converge, destroy, status and check its Work. Package
// pluginconfig holds the checks such a section's
// Validate is made of, and package plugintest runs a plugin in-process for
// its tests.
package plugin
