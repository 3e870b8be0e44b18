package tcargocd_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/cmd/tcargocd"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// The ingress VIP and its floating IP netDoc reports.
const (
	ingressVIP = "10.0.0.250"
	ingressFIP = "203.0.113.80"
)

// netDoc is a state document of cluster whose net section reports the
// ingress VIP and its floating IP.
func netDoc(t *testing.T, cluster string) *state.Document {
	t.Helper()
	doc := state.New(cluster, "converge")
	sec := state.Section{Status: state.StatusSucceeded}
	res := provider.NetworkResult{Ingress: provider.Endpoint{VIP: netip.MustParseAddr(ingressVIP), Advertised: ingressFIP}, Project: "physics"}
	if err := sec.SetOutputs(sections.Network{Provider: config.ProviderOpenStack, NetworkResult: res}); err != nil {
		t.Fatal(err)
	}
	if err := doc.Put("net", sec); err != nil {
		t.Fatal(err)
	}
	return doc
}

func openstackCluster() *config.Cluster {
	return &config.Cluster{Name: "demo", OpenStack: &config.OpenStack{URL: "https://keystone.example.edu:5000/v3", Region: "RegionTwo"}}
}

func repos() map[string]any {
	return m{"git": m{"url": gitURL}, "infra": m{"url": infraURL}, "metallb": m{"enabled": true, "version": "0.14.9"}}
}

// values renders and parses the cluster Application's values.
func values(t *testing.T, cfg *config.Cluster, section any, doc *state.Document) map[string]any {
	t.Helper()
	text, err := tcargocd.ClusterValues(cfg, section, doc, "https://203.0.113.5:6443", "c-abc12")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("values are not YAML: %v\n%s", err, text)
	}
	return v
}

// TestAR4_MetalLBAddresses: the OpenStack ingress VIP as <ip>/32 with its
// floating IP and VIP as public and private IP; the Proxmox ingress_pool
// range verbatim with no public or private IP; an OpenStack run without
// the net phase's outputs refuses rather than renders empty addresses.
func TestAR4_MetalLBAddresses(t *testing.T) {
	t.Parallel()
	v := values(t, openstackCluster(), repos(), netDoc(t, "demo"))
	got := map[string]any{"metallb": v["metallb"].(map[string]any)["addresses"], "ingress": v["ingresscontroller"], "openstack": v["openstack"]}
	want := map[string]any{
		"metallb":   []any{"10.0.0.250/32"},
		"openstack": map[string]any{"project": "physics", "auth_url": "https://keystone.example.edu:5000/v3", "region": "RegionTwo"},
		"ingress":   map[string]any{"enabled": false, "class": "traefik", "publicIP": "203.0.113.80", "privateIP": "10.0.0.250", "traefik": map[string]any{"version": ""}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("openstack (-want +got):\n%s", diff)
	}

	pool := config.AddrRange{Start: netip.MustParseAddr("192.0.2.100"), End: netip.MustParseAddr("192.0.2.120")}
	px := &config.Cluster{Name: "demo", Proxmox: &config.Proxmox{}, Network: config.Network{External: &config.ExternalNetwork{IngressPool: pool}}}
	v = values(t, px, repos(), nil)
	got = map[string]any{"metallb": v["metallb"].(map[string]any)["addresses"], "public": v["ingresscontroller"].(map[string]any)["publicIP"], "private": v["ingresscontroller"].(map[string]any)["privateIP"]}
	if diff := cmp.Diff(map[string]any{"metallb": []any{"192.0.2.100-192.0.2.120"}, "public": "", "private": ""}, got); diff != "" {
		t.Errorf("proxmox (-want +got):\n%s", diff)
	}

	if _, err := tcargocd.ClusterValues(openstackCluster(), repos(), state.New("demo", "converge"), "https://x", ""); err == nil || !strings.Contains(err.Error(), "ingress addresses are unknown") {
		t.Errorf("no net outputs: err = %v", err)
	}
}

// TestAR5_ValuesYAMLSafe: every interpolated scalar comes back unchanged
// from the values document (apostrophes, colons, newlines, YAML's reserved
// words, a long line), and a single-line value stays on one line.
func TestAR5_ValuesYAMLSafe(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 40) + "end"
	nasty := map[string]string{
		"metallb":       "it's: a 'version' # not a comment",
		"certmanager":   "no",
		"sealedsecrets": "null",
		"cinder":        "true\nsecond: line",
	}
	section := repos()
	for app, version := range nasty {
		section[app] = m{"enabled": true, "version": version}
	}
	section["certmanager"].(map[string]any)["email"] = "o'brien@example.edu"
	section["ingress"] = m{"enabled": true, "class": "[x]: {y}", "traefik": m{"version": long}}
	section["nfs"] = m{"enabled": true, "servers": m{"a: b": m{"server": "- x", "path": "/e'x", "defaultClass": true}}}
	cfg := openstackCluster()
	cfg.OpenStack.Region = "yes"
	v := values(t, cfg, section, netDoc(t, "demo"))
	for app, version := range nasty {
		if got := v[app].(map[string]any)["version"]; got != version {
			t.Errorf("%s.version = %#v, want %#v", app, got, version)
		}
	}
	checks := map[string][2]any{
		"certmanager.email":         {v["certmanager"].(map[string]any)["email"], "o'brien@example.edu"},
		"ingresscontroller.class":   {v["ingresscontroller"].(map[string]any)["class"], "[x]: {y}"},
		"traefik.version":           {v["ingresscontroller"].(map[string]any)["traefik"].(map[string]any)["version"], long},
		"openstack.region":          {v["openstack"].(map[string]any)["region"], "yes"},
		"nfs.servers":               {v["nfs"].(map[string]any)["servers"], map[string]any{"a: b": map[string]any{"server": "- x", "path": "/e'x", "defaultClass": true}}},
		"cluster.rancher.id":        {v["cluster"].(map[string]any)["rancher"].(map[string]any)["id"], "c-abc12"},
		"nfs.mountPermissions":      {v["nfs"].(map[string]any)["mountPermissions"], "0777"},
		"gateway_crd.enabled":       {v["gateway_crd"].(map[string]any)["enabled"], true},
		"sync (default false)":      {v["sync"], false},
		"certmanager.class follows": {v["certmanager"].(map[string]any)["class"], "[x]: {y}"},
	}
	for name, c := range checks {
		if diff := cmp.Diff(c[1], c[0]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	text, err := tcargocd.ClusterValues(cfg, section, netDoc(t, "demo"), "https://x", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, long) {
		t.Errorf("the long single-line value was folded:\n%s", text)
	}
}

// TestAR3_PolicyValidator is Argo CD's project role policy rules (plugins.md
// §3.3), which the CRD does not enforce, as the plugin implements them.
func TestAR3_PolicyValidator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, policy, wantErr string
	}{
		{"admin", "p, proj:demo:user, applications, *, demo/*, allow", ""},
		{"user read-only", "p, proj:demo:user, applications, get, demo/*, allow", ""},
		{"namespaced object", "p, proj:demo:user, logs, get, demo/ns-1/app.x, deny", ""},
		{"action prefix", "p, proj:demo:user, applications, action/apps/Deployment/restart, demo/*, allow", ""},
		{"update prefix", "p, proj:demo:user, applications, update/*, demo/*, allow", ""},
		{"five fields", "p, proj:demo:user, applications, get, demo/*", "must have the form"},
		{"seven fields", "p, proj:demo:user, applications, get, demo/*, allow, x", "must have the form"},
		{"not p", "g, proj:demo:user, applications, get, demo/*, allow", "must have the form"},
		{"subject of another role", "p, proj:demo:admin, applications, get, demo/*, allow", `subject "proj:demo:admin" must be "proj:demo:user"`},
		{"subject of another project", "p, proj:other:user, applications, get, demo/*, allow", `must be "proj:demo:user"`},
		{"unknown resource", "p, proj:demo:user, deployments, get, demo/*, allow", `resource "deployments" must be one of`},
		{"unknown action", "p, proj:demo:user, applications, read, demo/*, allow", `action "read" must be one of`},
		{"object of another project", "p, proj:demo:user, applications, get, other/*, allow", `object "other/*" must be`},
		{"object without name", "p, proj:demo:user, applications, get, demo, allow", `object "demo" must be`},
		{"object with a space", "p, proj:demo:user, applications, get, demo/a b, allow", `object "demo/a b" must be`},
		{"bad effect", "p, proj:demo:user, applications, get, demo/*, permit", `effect "permit" must be allow or deny`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tcargocd.ValidPolicy("demo", "user", tt.policy)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
