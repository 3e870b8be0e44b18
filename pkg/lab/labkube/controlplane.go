package labkube

import (
	"net/netip"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// staticPods are the control-plane static pods Talos runs on the node st
// describes (none on a worker), as its configuration renders them.
func staticPods(st talosnode.NodeStatus) []kubeapi.StaticPod {
	pods := make([]kubeapi.StaticPod, len(st.StaticPods))
	for i, p := range st.StaticPods {
		pods[i] = kubeapi.StaticPod(p)
	}
	return pods
}

// apiServerVersion is the version the API of cluster reports on /version
// (see kubeapi.Options.Version): the tag of the kube-apiserver image
// configured on the control plane holding the API's VIP, whose apiserver
// answers there; with no VIP owner known (an endpoint that is no VIP, or
// nobody holds it), the lowest tag among the running control planes. ""
// (the binary's version) when none runs.
func (k *Kubernetes) apiServerVersion(cluster string, vip netip.Addr) string {
	owner := k.opts.VIPs.Owner(cluster, vip)
	var lowest *version.Version
	lowestTag := ""
	for _, n := range k.opts.Fleet.Nodes() {
		st := n.Status()
		if st.Cluster != cluster || !st.ControlPlane || !st.APIUp {
			continue
		}
		tag := apiServerTag(st)
		if owner.IsValid() && st.Address == owner {
			return tag
		}
		if v, err := version.ParseSemantic(tag); err == nil && (lowest == nil || v.LessThan(lowest)) {
			lowest, lowestTag = v, tag
		}
	}
	return lowestTag
}

// apiServerTag is the tag of the kube-apiserver image st's node runs.
func apiServerTag(st talosnode.NodeStatus) string {
	for _, p := range staticPods(st) {
		if p.Component == "kube-apiserver" {
			return kubeapi.ImageTag(p.Image)
		}
	}
	return ""
}
