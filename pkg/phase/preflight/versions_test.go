package preflight

import (
	"fmt"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/compatibility"

	"github.com/talosc/talosc/pkg/config"
)

// TestCheckVersions is I-11/I-12 with upgrades allowed: what a converge
// cannot reach from what every node runs is refused before any mutation.
func TestCheckVersions(t *testing.T) {
	t.Parallel()
	nodes := func(versions ...string) []nodeVersion {
		out := make([]nodeVersion, len(versions))
		for i, v := range versions {
			out[i] = nodeVersion{host: fmt.Sprintf("demo-node-%02d", i+1), version: v}
		}
		return out
	}
	up := func(kube string, talos ...string) view {
		return view{up: true, kubeVersion: kube, talos: nodes(talos...)}
	}
	for _, tc := range []struct {
		name        string
		live        view
		talos, kube string
		refusing    string
	}{
		{"not up: nothing to compare", view{kubeVersion: "v1.36.1", talos: nodes("v1.14.1")}, "v1.13.8", "v1.35.0", ""},
		{"the running versions", up("v1.34.3", "v1.13.8", "v1.13.8"), "v1.13.8", "v1.34.3", ""},
		{"a Talos upgrade", up("v1.34.3", "v1.13.8", "v1.13.8"), "v1.14.1", "v1.34.3", ""},
		{"both upgraded by one edit", up("v1.34.3", "v1.13.8", "v1.13.8"), "v1.14.1", "v1.36.1", ""},
		{"a Kubernetes upgrade", up("v1.34.3", "v1.13.8"), "v1.13.8", "v1.36.1", ""},
		{"a resumed Talos upgrade", up("v1.34.3", "v1.14.1", "v1.13.8"), "v1.14.1", "v1.34.3", ""},
		{"a prerelease to its release", up("v1.34.3", "v1.14.0-beta.1"), "v1.14.0", "v1.34.3", ""},
		{
			"a Kubernetes downgrade", up("v1.35.4", "v1.13.8"), "v1.13.8", "v1.34.2",
			"kubernetes.version v1.34.2 is older than the running v1.35.4; kubernetes downgrades are not supported",
		},
		{
			"a Talos downgrade", up("v1.35.4", "v1.14.1", "v1.14.1"), "v1.13.8", "v1.35.4",
			"talos.version v1.13.8 is older than the running v1.14.1; talos downgrades are not supported",
		},
		{
			"the highest running Talos decides a downgrade", up("v1.35.4", "v1.13.8", "v1.14.1", "v1.13.8"), "v1.14.0", "v1.35.4",
			"talos.version v1.14.0 is older than the running v1.14.1; talos downgrades are not supported",
		},
		{
			"an upgrade path machinery refuses", up("v1.32.0", "v1.13.8", "v1.11.5", "v1.11.5"), "v1.14.1", "v1.32.0",
			"talos.version v1.14.1 cannot be installed on demo-node-02, demo-node-03 (running v1.11.5): host version 1.11.5 is too old to upgrade to Talos 1.14.1; upgrade through an intermediate Talos release first",
		},
		{
			"the running Kubernetes unsupported by the target Talos", up("v1.31.4", "v1.13.8", "v1.13.8"), "v1.14.1", "v1.31.4",
			"kubernetes v1.31.4 runs on this cluster but talos.version v1.14.1 supports Kubernetes 1.32 to 1.37: first upgrade Kubernetes within the running Talos v1.13.8 (it supports 1.31 to 1.36), then raise talos.version",
		},
		{
			"a Kubernetes upgrade does not help the Talos upgrade first", up("v1.31.4", "v1.13.8"), "v1.14.1", "v1.33.0",
			"kubernetes v1.31.4 runs on this cluster but talos.version v1.14.1 supports Kubernetes 1.32 to 1.37",
		},
		{
			"an unreadable node version", up("v1.35.4", "v1.13.8", "unknown"), "v1.13.8", "v1.35.4",
			`the Talos API of demo-node-02 reports version "unknown"`,
		},
		{
			"no node version read", up("v1.35.4"), "v1.13.8", "v1.35.4",
			"no node's Talos version was read",
		},
		{
			"an unreadable Kubernetes version", up("", "v1.13.8"), "v1.13.8", "v1.35.4",
			"running kubernetes version",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := &config.Cluster{Talos: config.Talos{Version: tc.talos}, Kubernetes: config.Kubernetes{Version: tc.kube}}
			err := tc.live.checkVersions(cfg)
			switch {
			case tc.refusing == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refusing != "" && (err == nil || !strings.Contains(err.Error(), tc.refusing)):
				t.Errorf("err = %v, want a refusal containing %q", err, tc.refusing)
			}
		})
	}
}

// TestKubernetesSupportMatchesMachinery keeps the support matrix that
// messages quote (pkg/config) in step with the one machinery decides by,
// for every Talos minor pkg/config knows.
func TestKubernetesSupportMatchesMachinery(t *testing.T) {
	t.Parallel()
	for minor := 13; ; minor++ {
		tv := config.Version{Major: 1, Minor: minor}
		oldest, newest, ok := config.KubernetesSupport(tv)
		if !ok {
			if minor == 13 {
				t.Fatalf("config knows no Kubernetes support for Talos %s, the oldest talosc accepts", tv)
			}
			return
		}
		var lo, hi int
		if _, err := fmt.Sscanf(oldest+" "+newest, "1.%d 1.%d", &lo, &hi); err != nil {
			t.Fatalf("KubernetesSupport(%s) = %q, %q: %v", tv, oldest, newest, err)
		}
		talos, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: tv.String()})
		if err != nil {
			t.Fatal(err)
		}
		for kube, want := range map[string]bool{
			fmt.Sprintf("1.%d.0", lo): true, fmt.Sprintf("1.%d.9", hi): true,
			fmt.Sprintf("1.%d.9", lo-1): false, fmt.Sprintf("1.%d.0", hi+1): false,
		} {
			kv, err := compatibility.ParseKubernetesVersion(kube)
			if err != nil {
				t.Fatal(err)
			}
			if got := kv.SupportedWith(talos) == nil; got != want {
				t.Errorf("Talos %s with Kubernetes %s: machinery says supported %v, pkg/config (%s to %s) says %v", tv, kube, got, oldest, newest, want)
			}
		}
	}
}
