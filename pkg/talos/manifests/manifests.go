// Package manifests holds the pinned Kubernetes manifests that control planes
// carry as Talos inline manifests: the kubelet serving certificate approver and
// metrics-server. They are vendored byte for byte from upstream releases (see
// vendor/README.md for provenance and checksums) and embedded in the binary, so
// a booting node fetches nothing from the internet. Unpinned upstream URLs broke
// Kubernetes upgrades in the reference tool; pinning them is the point.
package manifests

import _ "embed" // for the go:embed directives below

// ApproverVersion is the vendored kubelet-serving-cert-approver release.
const ApproverVersion = "v0.11.0"

// MetricsServerVersion is the vendored metrics-server release.
const MetricsServerVersion = "v0.9.0"

// ApproverName is the inline manifest name of the kubelet serving certificate approver.
const ApproverName = "kubelet-serving-cert-approver"

// MetricsServerName is the inline manifest name of metrics-server.
const MetricsServerName = "metrics-server"

// Embedded strings are immutable, so these package-level variables hold no
// mutable state; go:embed only works on package-level variables.
var (
	//go:embed vendor/kubelet-serving-cert-approver-v0.11.0.yaml
	approverYAML string

	//go:embed vendor/metrics-server-v0.9.0.yaml
	metricsServerYAML string
)

// Manifest is one Talos inline manifest: a name unique within the cluster
// config and a multi-document Kubernetes YAML stream.
type Manifest struct {
	// Name is the inline manifest name (cluster.inlineManifests[].name).
	Name string
	// Contents is the YAML stream, exactly the vendored upstream file.
	Contents string
}

// Inline returns the inline manifests every control plane carries, in the
// order the reference tool emits them: kubelet-serving-cert-approver, then
// metrics-server. Each call returns a fresh slice.
func Inline() []Manifest {
	return []Manifest{
		{Name: ApproverName, Contents: approverYAML},
		{Name: MetricsServerName, Contents: metricsServerYAML},
	}
}
