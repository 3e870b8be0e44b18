package talosnode

import (
	"maps"
	"net/netip"
	"reflect"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

// kubeletRun is the kubelet of one boot: the spec it (last) started with,
// and whether it is restarting onto a new one.
type kubeletRun struct {
	spec       k8s.KubeletSpecSpec
	restarting bool
}

// renderKubelet is the KubeletSpec Talos renders from a configuration
// (its kubelet controller): the image, the command line (Talos's flags,
// then machine.kubelet.extraArgs over them) and the kubelet configuration
// (the defaults the lab knows, then machine.kubelet.extraConfig).
func renderKubelet(mc *machineConfig, hostname string, addr netip.Addr) k8s.KubeletSpecSpec {
	args := map[string][]string{
		"config":               {"/etc/kubernetes/kubelet.yaml"},
		"cert-dir":             {constants.KubeletPKIDir},
		"hostname-override":    {hostname},
		"bootstrap-kubeconfig": {constants.KubeletBootstrapKubeconfig},
		"kubeconfig":           {constants.KubeletKubeconfig},
		"node-ip":              {addr.String()},
	}
	config := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1",
		"kind":       "KubeletConfiguration",
	}
	if k := mc.provider.K8sKubeletConfig(); k != nil {
		maps.Copy(args, k.ExtraArgs())
		if dns := k.ClusterDNS(); len(dns) > 0 {
			config["clusterDNS"] = anySlice(dns)
		}
		maps.Copy(config, k.ExtraConfig())
	}
	if nw := mc.provider.K8sNetworkConfig(); nw != nil && nw.DNSDomain() != "" {
		config["clusterDomain"] = nw.DNSDomain()
	}
	return k8s.KubeletSpecSpec{
		Image: mc.kubeletImage, Args: commandLine("", args), ExpectedNodename: hostname, Config: config,
	}
}

// anySlice is a []string as the []any an unstructured object holds.
func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// restartKubelet restarts the kubelet if the active configuration changed
// its spec, as Talos does: its Service goes away and comes back, running
// the new spec, after Timing.KubeletRestart (a kubelet that has not started
// yet just starts with it); f.mu held.
func (n *Node) restartKubelet() {
	want := renderKubelet(n.cfg, n.hostname(), n.addr)
	switch {
	case !n.osUp || n.kubelet.restarting || reflect.DeepEqual(want, n.kubelet.spec):
		return
	case !n.servicesUp:
		n.kubelet.spec = want
		return
	}
	n.kubelet.restarting = true
	f, g := n.fleet, n.gen
	f.after(f.timing.KubeletRestart, func() {
		f.mu.Lock()
		ok := n.gen == g && n.osUp && n.cfg != nil
		if ok {
			n.kubelet = kubeletRun{spec: renderKubelet(n.cfg, n.hostname(), n.addr)}
		}
		f.mu.Unlock()
		if ok {
			n.syncResources()
		}
	})
}

// kubeletState is the kubelet service; f.mu held.
func (n *Node) kubeletState() serviceState {
	switch {
	case !n.servicesUp:
		return serviceState{"Waiting", `Waiting for service "cri" to be "up"`, false}
	case n.kubelet.restarting:
		return serviceState{"Preparing", "Running pre state", false}
	}
	return running
}
