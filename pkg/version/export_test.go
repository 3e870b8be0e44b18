package version

// Resolve exposes resolve to the external tests.
var Resolve = resolve
