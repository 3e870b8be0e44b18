// Package version reports the version of the talosc build that is running.
package version

import "runtime/debug"

// version is set at link time by the Makefile:
//
//	go build -ldflags "-X github.com/talosc/talosc/pkg/version.version=v0.3.1"
//
// It is the only package-level variable allowed in talosc: the linker's -X flag
// can only set a package-level string variable, and nothing writes it at run
// time.
var version string

// Version returns the version of this build: the value injected by the linker
// when there is one, else the module version recorded by "go install
// module@version", else "dev".
func Version() string {
	return resolve(version, debug.ReadBuildInfo)
}

// resolve picks the version from the linker value and the build information.
// readBuildInfo is a parameter so tests can supply build information.
func resolve(linked string, readBuildInfo func() (*debug.BuildInfo, bool)) string {
	if linked != "" {
		return linked
	}
	if info, ok := readBuildInfo(); ok && info != nil {
		// "(devel)" is what a build from a checkout records; it says nothing.
		if v := info.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return "dev"
}
