package config

import "strings"

// The services talosc reads Talos and Kubernetes releases from when
// cluster.yaml names no other (talos.image_factory, kubernetes.kubelet_repository).
const (
	// DefaultImageFactory is the public Image Factory.
	DefaultImageFactory = "https://factory.talos.dev"
	// DefaultKubeletRepository is where Sidero Labs publishes the kubelet
	// images Talos runs.
	DefaultKubeletRepository = "https://ghcr.io/siderolabs/kubelet"
)

// Source is a service talosc reads from without credentials: a self-hosted
// Image Factory or a registry mirror (air-gapped sites), or the lab's.
type Source struct {
	// URL is the service's https URL.
	URL string `yaml:"url" jsonschema:"format=uri" jsonschema_description:"https:// URL of the service."`
	// AllowHTTP accepts an http:// url (what it serves can then be
	// replaced in transit).
	AllowHTTP bool `yaml:"allow_http,omitempty" jsonschema_description:"Accept an http:// url: what the service answers can then be replaced in transit (a loopback lab; default false, http is refused)."`
}

// ImageFactoryURL is the Image Factory every image, schematic and installer
// reference comes from: talos.image_factory.url, else DefaultImageFactory.
func (c *Cluster) ImageFactoryURL() string {
	return c.Talos.ImageFactory.url(DefaultImageFactory)
}

// KubeletRepositoryURL is the kubelet image repository check reads the
// Kubernetes releases from: kubernetes.kubelet_repository.url, else
// DefaultKubeletRepository.
func (c *Cluster) KubeletRepositoryURL() string {
	return c.Kubernetes.KubeletRepository.url(DefaultKubeletRepository)
}

func (s *Source) url(def string) string {
	if s == nil || s.URL == "" {
		return def
	}
	return strings.TrimSuffix(s.URL, "/")
}

// sources checks talos.image_factory and kubernetes.kubelet_repository.
func (v *validator) sources() {
	if f := v.c.Talos.ImageFactory; f != nil && v.required("talos.image_factory.url") {
		v.httpsURL("talos.image_factory", f.URL, f.AllowHTTP, plainHTTPRisk{
			would: "the Talos images and installers it serves could be replaced in transit",
			does:  "the Talos images and installers it serves can be replaced in transit",
		})
	}
	if r := v.c.Kubernetes.KubeletRepository; r != nil && v.required("kubernetes.kubelet_repository.url") {
		v.httpsURL("kubernetes.kubelet_repository", r.URL, r.AllowHTTP, plainHTTPRisk{
			would: "the Kubernetes releases check reports could be forged in transit",
			does:  "the Kubernetes releases check reports can be forged in transit",
		})
	}
}
