package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
)

// TestSources_Defaults: without talos.image_factory and
// kubernetes.kubelet_repository talosc reads the public services; with
// them, the named ones (a trailing slash dropped).
func TestSources_Defaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                 string
		cluster              string
		factory, kubeletRepo string
	}{
		{"absent", openstackBase, "https://factory.talos.dev", "https://ghcr.io/siderolabs/kubelet"},
		{
			"self-hosted", edit(t, openstackBase, set("talos.image_factory.url", "https://factory.corp.example/"),
				set("kubernetes.kubelet_repository.url", "https://registry.corp.example/siderolabs/kubelet")),
			"https://factory.corp.example", "https://registry.corp.example/siderolabs/kubelet",
		},
		{
			"loopback lab over http", edit(t, openstackBase,
				set("talos.image_factory", "{url: 'http://127.0.0.1:4000', allow_http: true}"),
				set("kubernetes.kubelet_repository", "{url: 'http://127.0.0.1:4000/siderolabs/kubelet', allow_http: true}")),
			"http://127.0.0.1:4000", "http://127.0.0.1:4000/siderolabs/kubelet",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustLoad(t, tc.cluster)
			if got := c.ImageFactoryURL(); got != tc.factory {
				t.Errorf("ImageFactoryURL = %q, want %q", got, tc.factory)
			}
			if got := c.KubeletRepositoryURL(); got != tc.kubeletRepo {
				t.Errorf("KubeletRepositoryURL = %q, want %q", got, tc.kubeletRepo)
			}
		})
	}
}

// TestSources_PlainHTTP: an http Image Factory or kubelet repository is
// refused, naming the key and the fix, unless the key opts in; then it is
// warned about on every load.
func TestSources_PlainHTTP(t *testing.T) {
	t.Parallel()
	none := config.LoadOptions{}
	runProblemCases(t, []problemCase{
		{
			"factory over http", only(edit(t, openstackBase, set("talos.image_factory.url", "http://factory.corp.example"))), none,
			config.Problems{inCluster("talos.image_factory.url", `talos.image_factory.url "http://factory.corp.example" is plain http: the Talos images and installers it serves could be replaced in transit; use https://, or set talos.image_factory.allow_http: true to accept that (a loopback lab)`)},
		},
		{
			"kubelet repository over http", only(edit(t, openstackBase, set("kubernetes.kubelet_repository.url", "http://registry.corp.example/siderolabs/kubelet"))), none,
			config.Problems{inCluster("kubernetes.kubelet_repository.url", `kubernetes.kubelet_repository.url "http://registry.corp.example/siderolabs/kubelet" is plain http: the Kubernetes releases check reports could be forged in transit; use https://, or set kubernetes.kubelet_repository.allow_http: true to accept that (a loopback lab)`)},
		},
		{
			"factory without url", only(edit(t, openstackBase, set("talos.image_factory.allow_http", "true"))), none,
			config.Problems{inCluster("talos.image_factory.url", "talos.image_factory.url is required")},
		},
		{
			"factory not a URL", only(edit(t, openstackBase, set("talos.image_factory.url", "factory.corp.example"))), none,
			config.Problems{inCluster("talos.image_factory.url", `talos.image_factory.url "factory.corp.example" is not an http(s) URL such as https://host:port/`)},
		},
	})
	c := mustLoad(t, edit(t, openstackBase, set("talos.image_factory", "{url: 'http://127.0.0.1:4000', allow_http: true}")))
	want := []string{"talos.image_factory.url is plain http (allowed by talos.image_factory.allow_http): the Talos images and installers it serves can be replaced in transit; use https:// outside a loopback lab"}
	if d := cmp.Diff(want, c.Warnings); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}
