package machineconfig_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

func TestCCMManifest(t *testing.T) {
	t.Parallel()
	dec := yaml.NewDecoder(bytes.NewReader([]byte(machineconfig.CCMManifest())))
	var kinds []string
	var deployment map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("CCM manifest: %v", err)
		}
		kinds = append(kinds, d["apiVersion"].(string)+"/"+d["kind"].(string))
		if d["kind"] == "Deployment" {
			deployment = d
		}
	}
	want := []string{
		"v1/ServiceAccount", "talos.dev/v1alpha1/ServiceAccount", "v1/ConfigMap",
		"rbac.authorization.k8s.io/v1/ClusterRole", "rbac.authorization.k8s.io/v1/ClusterRoleBinding",
		"rbac.authorization.k8s.io/v1/RoleBinding", "apps/v1/Deployment",
	}
	if d := cmp.Diff(want, kinds); d != "" {
		t.Errorf("CCM manifest objects (-want +got):\n%s", d)
	}
	containers, _ := dig(deployment, "spec", "template", "spec", "containers").([]any)
	if len(containers) != 1 || dig(containers[0], "image") != machineconfig.CCMImage {
		t.Fatalf("CCM container image %v, want the pinned %s", containers, machineconfig.CCMImage)
	}
	args, _ := dig(containers[0], "args").([]any)
	found := false
	for _, a := range args {
		found = found || a == "--controllers=cloud-node"
	}
	if !found {
		t.Errorf("CCM args %v lack --controllers=cloud-node", args)
	}
	if bytes.Contains([]byte(machineconfig.CCMManifest()), []byte("https://")) {
		t.Errorf("CCM manifest references a URL; nothing may be fetched at boot but the pinned image")
	}
}
