package imagefactory

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// KubeletRepository is the path of the kubelet image repository the lab
// serves (as ghcr.io serves siderolabs/kubelet).
const KubeletRepository = "siderolabs/kubelet"

// DefaultKubeletTags are the tags the lab's kubelet repository lists:
// several patches of each minor on the upgrade path the lab's clusters
// take (v1.34.3 → v1.35.4, the newest v1.35 patch → v1.36.1) and a newer
// minor, plus tags that are not releases (as the real repository has).
func DefaultKubeletTags() []string {
	return []string{
		"v1.34.0", "v1.34.1", "v1.34.2", "v1.34.3",
		"v1.35.0", "v1.35.1", "v1.35.2", "v1.35.3", "v1.35.4",
		"v1.36.0", "v1.36.1", "v1.37.0",
		"v1.36.0-rc.1", "v1.38.0-alpha.1", "latest", "sha256-0123abcd.sig",
	}
}

// anonymousToken is the token the lab's token endpoint hands out.
const anonymousToken = "lab-anonymous-pull"

// KubeletRepositoryURL is the repository URL talosc reads kubelet tags from.
func (f *Factory) KubeletRepositoryURL() string { return f.URL + "/" + KubeletRepository }

// registryRoutes serves the OCI distribution tags list of the kubelet
// repository behind an anonymous bearer-token challenge, paginated with
// n/last and Link headers, as ghcr.io does.
func (f *Factory) registryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /token", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("scope") != "repository:"+KubeletRepository+":pull" {
			http.Error(w, `{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`, http.StatusForbidden)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"token": anonymousToken})
	})
	mux.HandleFunc("GET /v2/"+KubeletRepository+"/tags/list", f.kubeletTags)
}

func (f *Factory) kubeletTags(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+anonymousToken {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="lab-registry",scope="repository:%s:pull"`, f.URL, KubeletRepository))
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
		return
	}
	tags := slices.Clone(f.opts.KubeletTags)
	slices.Sort(tags)
	if last := r.URL.Query().Get("last"); last != "" {
		i, _ := slices.BinarySearch(tags, last)
		for i < len(tags) && tags[i] <= last {
			i++
		}
		tags = tags[i:]
	}
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n <= 0 || (f.opts.TagsPageSize > 0 && n > f.opts.TagsPageSize) {
		n = f.opts.TagsPageSize // a registry caps what a client asks for
	}
	if n > 0 && n < len(tags) {
		tags = tags[:n]
		w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?last=%s&n=%d>; rel="next"`, KubeletRepository, tags[n-1], n))
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": KubeletRepository, "tags": tags})
}
