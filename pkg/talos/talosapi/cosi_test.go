package talosapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/stdpatches"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// TestSchematicUnreadable: extensions that cannot be read are an error,
// never "no schematic"; a refusal is not retried.
func TestSchematicUnreadable(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{})
	c := newCluster(t, 1, 0, talosnode.Options{Injector: inj})
	c.booted(cp1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: talosnode.ServiceName, PathPrefix: "/cosi.resource.State/List?", Status: http.StatusForbidden}}})
	id, err := cl.Schematic(t.Context(), c.addr(cp1))
	if id != "" || status.Code(err) != codes.PermissionDenied || !strings.HasPrefix(err.Error(), "talos List ExtensionStatuses on "+c.addr(cp1)+": ") {
		t.Errorf("Schematic with the extensions unreadable = %q, %v; want the node's refusal", id, err)
	}
	if n := c.calls("/cosi.resource.State/List?", codes.PermissionDenied); n != 1 {
		t.Errorf("%d refused lists, want 1", n)
	}
}

// TestCOSIRoutesByNode: the COSI client reads the node the context names,
// through the endpoint (a fault of the worker's shows which node
// answered).
func TestCOSIRoutesByNode(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{})
	c := newCluster(t, 1, 1, talosnode.Options{Injector: inj})
	c.booted(cp1, talosnode.Knobs{})
	c.booted(worker1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	get := func(host string) error {
		_, err := safe.StateGetByID[*runtime.MachineStatus](client.WithNode(t.Context(), c.addr(host)), cl.COSI(), runtime.MachineStatusID)
		return err
	}
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: talosnode.ServiceName, PathPrefix: "/cosi.resource.State/Get?node=" + c.addr(worker1), Status: http.StatusForbidden}}})
	if err := get(cp1); err != nil {
		t.Errorf("MachineStatus of the endpoint: %v", err)
	}
	if err := get(worker1); status.Code(err) != codes.PermissionDenied {
		t.Errorf("MachineStatus of the worker = %v, want the worker's fault", err)
	}
}

// TestPullImage pre-pulls Kubernetes images through the control plane's
// endpoint: done, or skipped where the node has no ImageService; a pull
// answered Unavailable, or whose answer was lost, is asked again; a refused
// one is an error naming the image and the node.
func TestPullImage(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{})
	c := newCluster(t, 1, 1, talosnode.Options{Injector: inj})
	c.booted(cp1, talosnode.Knobs{})
	c.booted(worker1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(worker1)
	apiserver, kubelet := "registry.k8s.io/kube-apiserver:v1.36.1", "ghcr.io/siderolabs/kubelet:v1.36.1"
	if err := cl.PullImage(t.Context(), node, apiserver, false); err != nil {
		t.Fatal(err)
	}
	if err := cl.PullImage(t.Context(), node, kubelet, true); err != nil {
		t.Fatal(err)
	}
	if n := c.calls(pullRPC, codes.OK); n != 2 {
		t.Errorf("%d pulls, want 2", n)
	}
	fault := func(code int) labnet.Fault {
		return labnet.Fault{Service: talosnode.ServiceName, PathPrefix: pullRPC, Nth: 1, Status: code}
	}
	for _, tc := range []struct {
		faults []labnet.Fault
		want   string // "" = success
	}{
		{[]labnet.Fault{fault(http.StatusNotImplemented)}, ""},
		{[]labnet.Fault{fault(http.StatusServiceUnavailable)}, ""},
		{[]labnet.Fault{fault(http.StatusNotFound)}, "talos Pull " + apiserver + " on " + node + ": rpc error: code = NotFound desc = injected fault: not found"},
	} {
		inj.Set(labnet.Knobs{Faults: tc.faults})
		err := cl.PullImage(t.Context(), node, apiserver, false)
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || err.Error() != tc.want)) {
			t.Errorf("PullImage with the first pull answered %d = %v, want %q", tc.faults[0].Status, err, tc.want)
		}
	}
	if n := c.calls(pullRPC, codes.OK); n != 3 {
		t.Errorf("%d pulls, want 3: the one after Unavailable", n)
	}
	// A pull whose answer is lost after the node pulled (apid's
	// DeadlineExceeded) is asked again: pulling twice is harmless.
	lost := fault(http.StatusGatewayTimeout)
	lost.After = true
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{lost}})
	if err := cl.PullImage(t.Context(), node, apiserver, false); err != nil {
		t.Errorf("PullImage after a lost answer: %v", err)
	}
}

// TestConfigVersionUnknown: an unknown component and a node without the
// component's configuration are errors, never version 0.
func TestConfigVersionUnknown(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 1, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	c.booted(worker1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	if v, err := cl.ConfigVersion(t.Context(), c.addr(cp1), "kube-proxy"); v != 0 || err == nil || !strings.Contains(err.Error(), `"kube-proxy" is not a control-plane component`) {
		t.Errorf("ConfigVersion of kube-proxy = %d, %v", v, err)
	}
	v, err := cl.ConfigVersion(t.Context(), c.addr(worker1), "kube-apiserver")
	if v != 0 || err == nil || !strings.HasPrefix(err.Error(), "talos Get APIServerConfigs.kubernetes.talos.dev kube-apiserver on "+c.addr(worker1)+": ") {
		t.Errorf("ConfigVersion on a worker = %d, %v; want the node's NotFound", v, err)
	}
}

// TestConfigVersion: the version of the configuration a control plane
// renders its static pod from grows when an apply changes it (and only
// that component's), on Talos 1.14 (final-<component>) and 1.13
// (<component>).
func TestConfigVersion(t *testing.T) {
	t.Parallel()
	for _, version := range []string{talos113, talosVersion} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			c := newClusterAt(t, version, 1, 0, talosnode.Options{})
			c.booted(cp1, talosnode.Knobs{})
			cl := c.dial(cp1, talosapi.Options{})
			node := c.addr(cp1)
			before := map[string]uint64{}
			for _, comp := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
				v, err := cl.ConfigVersion(t.Context(), node, comp)
				if err != nil || v == 0 {
					t.Fatalf("ConfigVersion(%s) = %d, %v", comp, v, err)
				}
				before[comp] = v
			}
			patched := patch(t, c.configs[cp1], apiServerImage(t, c.configs[cp1], "registry.k8s.io/kube-apiserver:v1.36.2"))
			if _, err := cl.ApplyConfiguration(t.Context(), node, patched, false); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				v, err := cl.ConfigVersion(t.Context(), node, "kube-apiserver")
				if err == nil && v > before["kube-apiserver"] {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("kube-apiserver's config version after the apply = %d, %v; want above %d", v, err, before["kube-apiserver"])
				}
				time.Sleep(10 * time.Millisecond)
			}
			if v, err := cl.ConfigVersion(t.Context(), node, "kube-scheduler"); err != nil || v != before["kube-scheduler"] {
				t.Errorf("kube-scheduler's config version = %d, %v; want %d, unchanged", v, err, before["kube-scheduler"])
			}
		})
	}
}

// TestManifests: a control plane's bootstrap manifests include the
// kube-proxy DaemonSet at the configured image and CoreDNS.
func TestManifests(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 0, talosnode.Options{})
	c.booted(cp1, talosnode.Knobs{})
	objs, err := c.dial(cp1, talosapi.Options{}).Manifests(t.Context(), c.addr(cp1))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		found[fmt.Sprintf("%v %v/%v", o["kind"], md["namespace"], md["name"])] = true
	}
	for _, want := range []string{"DaemonSet kube-system/kube-proxy", "Deployment kube-system/coredns"} {
		if !found[want] {
			t.Errorf("Manifests lack %s: %v", want, found)
		}
	}
}

// patch is config with a strategic merge patch applied.
// apiServerImage is the patch that sets config's kube-apiserver image in
// its own layout (v1alpha1 on 1.13, a KubeAPIServerConfig on 1.14).
func apiServerImage(t *testing.T, config []byte, image string) string {
	t.Helper()
	cfg, err := configloader.NewFromBytes(config)
	if err != nil {
		t.Fatal(err)
	}
	p, err := stdpatches.WithKubeAPIServerImage(stdpatches.GuessVersionContractKubeAPIServer(cfg), image)
	if err != nil {
		t.Fatal(err)
	}
	return string(p)
}

func patch(t *testing.T, config []byte, p string) []byte {
	t.Helper()
	lp, err := configpatcher.LoadPatch([]byte(p))
	if err != nil {
		t.Fatal(err)
	}
	out, err := configpatcher.Apply(configpatcher.WithBytes(config), []configpatcher.Patch{lp})
	if err != nil {
		t.Fatal(err)
	}
	b, err := out.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
