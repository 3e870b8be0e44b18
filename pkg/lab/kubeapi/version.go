package kubeapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"k8s.io/apimachinery/pkg/util/version"
	apiversion "k8s.io/apimachinery/pkg/version"
)

// reportVersion makes the apiserver's answer to GET /version report the
// version the front door is told (Options.Version): the lab runs one
// apiserver binary, fixed at v1.35.4, for clusters whose control planes
// are configured with other kube-apiserver images. gitVersion, major and
// minor follow that version; the rest (build, Go version, platform, the
// emulation and compatibility versions) stays the binary's. An answer the
// front door cannot read, or a version that is not semantic, passes as it
// is.
func (f *frontDoor) reportVersion(resp *http.Response) error {
	r := resp.Request
	if f.version == nil || r.Method != http.MethodGet || (r.URL.Path != "/version" && r.URL.Path != "/version/") ||
		resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
		return nil
	}
	v, err := version.ParseSemantic(f.version())
	if err != nil {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var info apiversion.Info
	if json.Unmarshal(body, &info) != nil {
		return nil
	}
	info.GitVersion = "v" + v.String()
	info.Major, info.Minor = strconv.FormatUint(uint64(v.Major()), 10), strconv.FormatUint(uint64(v.Minor()), 10)
	out, err := json.MarshalIndent(info, "", "  ") // as the apiserver writes it
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}
