package releases_test

import (
	"slices"
	"testing"

	"github.com/talosc/talosc/pkg/lab/imagefactory"
	"github.com/talosc/talosc/pkg/releases"
)

// The lab's registry asks for an anonymous bearer token and pages its tags
// list like ghcr.io; every page is read and only releases are kept.
func TestKubernetesVersionsThroughTokenAndPages(t *testing.T) {
	t.Parallel()
	tags := []string{"v1.34.0", "v1.35.0", "v1.35.4", "v1.36.1", "v1.37.0-alpha.1", "latest"}
	f, err := imagefactory.Start(t.Context(), imagefactory.Options{KubeletTags: tags, TagsPageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	got, err := releases.KubernetesVersions(t.Context(), nil, f.KubeletRepositoryURL())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"v1.34.0", "v1.35.0", "v1.35.4", "v1.36.1"}; !slices.Equal(got, want) {
		t.Errorf("versions = %v, want %v", got, want)
	}
	var pages int
	for _, c := range f.Recorder().Calls() {
		if c.Path == "/v2/"+imagefactory.KubeletRepository+"/tags/list" && c.Status == 200 {
			pages++
		}
	}
	if pages != 3 {
		t.Errorf("%d tags pages read, want 3 (6 tags, 2 a page)", pages)
	}
}

func TestKubernetesVersionsRefusesABadRepository(t *testing.T) {
	t.Parallel()
	if _, err := releases.KubernetesVersions(t.Context(), nil, "ghcr.io/siderolabs/kubelet"); err == nil {
		t.Error("a repository without a scheme was accepted")
	}
}
