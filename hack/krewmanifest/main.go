// Command krewmanifest renders the krew plugin manifest template
// (krew/talosc.yaml) for one release: it fills in the version, and each
// platform's archive URL and sha256 from the release's checksums.txt.
//
// It fails, writing nothing, when a platform in the template has no checksum,
// when an archive in checksums.txt has no platform in the template, when a
// checksum is not a sha256, when the version is not what krew accepts, or
// when the result is not a YAML document with a uri and sha256 per platform.
//
//	go run ./hack/krewmanifest -version v0.1.0 \
//	    -checksums dist/checksums.txt -template krew/talosc.yaml -o dist/talosc.yaml
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
