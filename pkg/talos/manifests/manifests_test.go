package manifests

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// vendoredFile names the file under vendor/ that an inline manifest embeds.
func vendoredFile(name string) string {
	switch name {
	case ApproverName:
		return "kubelet-serving-cert-approver-" + ApproverVersion + ".yaml"
	case MetricsServerName:
		return "metrics-server-" + MetricsServerVersion + ".yaml"
	default:
		return ""
	}
}

// header is the part every Kubernetes object must have.
type header struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
}

// container is the part of a pod template container the tests look at.
type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
}

// deployment is the part of an apps/v1 Deployment the tests look at.
type deployment struct {
	Spec struct {
		Template struct {
			Spec struct {
				Containers []container `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// document is one decoded object of a manifest stream.
type document struct {
	header
	node *yaml.Node
}

// decodeStream decodes a multi-document YAML stream the way a Kubernetes
// client does, failing the test on an empty document or a missing identity.
func decodeStream(t *testing.T, contents string) []document {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(contents))
	var docs []document
	for i := 0; ; i++ {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var h header
		if err := node.Decode(&h); err != nil {
			t.Fatalf("document %d: decode header: %v", i, err)
		}
		if h.APIVersion == "" || h.Kind == "" || h.Metadata.Name == "" {
			t.Fatalf("document %d: missing apiVersion/kind/metadata.name: %+v", i, h)
		}
		docs = append(docs, document{header: h, node: &node})
	}
	if len(docs) == 0 {
		t.Fatal("stream holds no documents")
	}
	return docs
}

// onlyDeployment returns the containers of the single Deployment in docs.
func onlyDeployment(t *testing.T, docs []document) []container {
	t.Helper()
	var found []container
	n := 0
	for _, d := range docs {
		if d.APIVersion != "apps/v1" || d.Kind != "Deployment" {
			continue
		}
		n++
		var dep deployment
		if err := d.node.Decode(&dep); err != nil {
			t.Fatalf("decode Deployment %s: %v", d.Metadata.Name, err)
		}
		found = dep.Spec.Template.Spec.Containers
	}
	if n != 1 {
		t.Fatalf("want exactly one apps/v1 Deployment, got %d", n)
	}
	return found
}

func TestInlineOrderAndContents(t *testing.T) {
	t.Parallel()
	got := Inline()
	names := make([]string, 0, len(got))
	for _, m := range got {
		names = append(names, m.Name)
		raw, err := os.ReadFile(filepath.Join("vendor", vendoredFile(m.Name)))
		if err != nil {
			t.Fatalf("%s: read vendored file: %v", m.Name, err)
		}
		if m.Contents != string(raw) {
			t.Errorf("%s: Contents differ from vendor/%s", m.Name, vendoredFile(m.Name))
		}
	}
	if diff := cmp.Diff([]string{"kubelet-serving-cert-approver", "metrics-server"}, names); diff != "" {
		t.Errorf("Inline() names (-want +got):\n%s", diff)
	}

	// Callers own the slice they get; mutating it must not leak into the next call.
	got[0].Contents = "mutated"
	if Inline()[0].Contents == "mutated" {
		t.Error("Inline() returned shared state")
	}
}

func TestObjects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want []string // apiVersion kind namespace/name, in file order
	}{
		{ApproverName, []string{
			"v1 Namespace /kubelet-serving-cert-approver",
			"v1 ServiceAccount kubelet-serving-cert-approver/kubelet-serving-cert-approver",
			"rbac.authorization.k8s.io/v1 ClusterRole /certificates:kubelet-serving-cert-approver",
			"rbac.authorization.k8s.io/v1 ClusterRole /events:kubelet-serving-cert-approver",
			"rbac.authorization.k8s.io/v1 RoleBinding default/events:kubelet-serving-cert-approver",
			"rbac.authorization.k8s.io/v1 ClusterRoleBinding /kubelet-serving-cert-approver",
			"v1 Service kubelet-serving-cert-approver/kubelet-serving-cert-approver",
			"apps/v1 Deployment kubelet-serving-cert-approver/kubelet-serving-cert-approver",
		}},
		{MetricsServerName, []string{
			"v1 ServiceAccount kube-system/metrics-server",
			"rbac.authorization.k8s.io/v1 ClusterRole /system:aggregated-metrics-reader",
			"rbac.authorization.k8s.io/v1 ClusterRole /system:metrics-server",
			"rbac.authorization.k8s.io/v1 RoleBinding kube-system/metrics-server-auth-reader",
			"rbac.authorization.k8s.io/v1 ClusterRoleBinding /metrics-server:system:auth-delegator",
			"rbac.authorization.k8s.io/v1 ClusterRoleBinding /system:metrics-server",
			"v1 Service kube-system/metrics-server",
			"apps/v1 Deployment kube-system/metrics-server",
			"apiregistration.k8s.io/v1 APIService /v1beta1.metrics.k8s.io",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, d := range decodeStream(t, manifestNamed(t, tt.name).Contents) {
				got = append(got, d.APIVersion+" "+d.Kind+" "+d.Metadata.Namespace+"/"+d.Metadata.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImagesArePinned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		container string
		image     string
	}{
		// Upstream tags the approver image without the leading "v".
		{ApproverName, "cert-approver", "ghcr.io/alex1989hu/kubelet-serving-cert-approver:" + strings.TrimPrefix(ApproverVersion, "v")},
		{MetricsServerName, "metrics-server", "registry.k8s.io/metrics-server/metrics-server:" + MetricsServerVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			containers := onlyDeployment(t, decodeStream(t, manifestNamed(t, tt.name).Contents))
			want := []container{{Name: tt.container, Image: tt.image}}
			got := make([]container, 0, len(containers))
			for _, c := range containers {
				got = append(got, container{Name: c.Name, Image: c.Image})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("containers (-want +got):\n%s", diff)
			}
		})
	}
}

// Kubelet serving certificates are approved by the approver and signed by the
// cluster CA, so metrics-server must verify them rather than skip verification.
func TestMetricsServerVerifiesKubeletTLS(t *testing.T) {
	t.Parallel()
	containers := onlyDeployment(t, decodeStream(t, manifestNamed(t, MetricsServerName).Contents))
	for _, c := range containers {
		for _, arg := range c.Args {
			if strings.HasPrefix(arg, "--kubelet-insecure-tls") {
				t.Errorf("container %s has %q; kubelet certificates must be verified", c.Name, arg)
			}
		}
	}
	if strings.Contains(manifestNamed(t, MetricsServerName).Contents, "kubelet-insecure-tls") {
		t.Error("metrics-server manifest mentions kubelet-insecure-tls")
	}
}

// Neither upstream file contains a URL at all (not even in comments or
// annotations), so any "://" would be an edit that could make a node fetch
// something at boot.
func TestNoURLs(t *testing.T) {
	t.Parallel()
	for _, m := range Inline() {
		for i, line := range strings.Split(m.Contents, "\n") {
			if strings.Contains(line, "://") {
				t.Errorf("%s line %d holds a URL: %q", m.Name, i+1, line)
			}
		}
	}
}

func TestChecksumsMatchREADME(t *testing.T) {
	t.Parallel()
	recorded := readmeRecords(t)

	entries, err := os.ReadDir("vendor")
	if err != nil {
		t.Fatalf("read vendor: %v", err)
	}
	var onDisk []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			onDisk = append(onDisk, e.Name())
		}
	}
	var inREADME []string
	for name := range recorded {
		inREADME = append(inREADME, name)
	}
	slices.Sort(inREADME)
	if diff := cmp.Diff(onDisk, inREADME); diff != "" {
		t.Errorf("vendor/*.yaml vs README sections (-disk +readme):\n%s", diff)
	}

	for _, m := range Inline() {
		file := vendoredFile(m.Name)
		rec, ok := recorded[file]
		if !ok {
			t.Errorf("%s: README has no section for %s", m.Name, file)
			continue
		}
		sum := sha256.Sum256([]byte(m.Contents))
		if got := hex.EncodeToString(sum[:]); got != rec.sha256 {
			t.Errorf("%s: sha256 %s, README records %s", file, got, rec.sha256)
		}
		if got := len(m.Contents); got != rec.size {
			t.Errorf("%s: %d bytes, README records %d", file, got, rec.size)
		}
	}
}

// record is what vendor/README.md states about one vendored file.
type record struct {
	sha256 string
	size   int
}

// readmeRecords parses vendor/README.md: a "## <file>" heading, then
// "- sha256: <hex>" and "- size: <n> bytes" lines.
func readmeRecords(t *testing.T) map[string]record {
	t.Helper()
	f, err := os.Open(filepath.Join("vendor", "README.md"))
	if err != nil {
		t.Fatalf("open README: %v", err)
	}
	defer f.Close()

	sumLine := regexp.MustCompile(`^- sha256: ([0-9a-f]{64})$`)
	sizeLine := regexp.MustCompile(`^- size: ([0-9]+) bytes$`)
	out := map[string]record{}
	current := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "## "); ok {
			current = strings.TrimSpace(name)
			out[current] = record{}
			continue
		}
		if current == "" {
			continue
		}
		rec := out[current]
		if m := sumLine.FindStringSubmatch(line); m != nil {
			rec.sha256 = m[1]
		}
		if m := sizeLine.FindStringSubmatch(line); m != nil {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				t.Fatalf("README %s: size %q: %v", current, m[1], err)
			}
			rec.size = n
		}
		out[current] = rec
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read README: %v", err)
	}
	for name, rec := range out {
		if rec.sha256 == "" || rec.size == 0 {
			t.Fatalf("README section %q lacks a sha256 or size line", name)
		}
	}
	return out
}

func manifestNamed(t *testing.T, name string) Manifest {
	t.Helper()
	for _, m := range Inline() {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no inline manifest %q", name)
	return Manifest{}
}
