// Package docs holds talosc's own documents (reference-behaviour.md,
// day2.md, plugins.md, architecture.md). It has no code: its test walks
// every Go source of the module and fails, naming file:line, for each
// id or section a comment cites that no document here defines, and when
// architecture.md's step list differs from the nodes phase's.
package docs
