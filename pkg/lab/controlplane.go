package lab

import (
	"cmp"
	"net/netip"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// controlPlaneImages are the control plane's static pods, each with the
// image repository Talos defaults it to.
func controlPlaneImages() map[string]string {
	return map[string]string{
		"kube-apiserver":          constants.KubernetesAPIServerImage,
		"kube-controller-manager": constants.KubernetesControllerManagerImage,
		"kube-scheduler":          constants.KubernetesSchedulerImage,
	}
}

// staticPods are the control-plane static pods Talos runs on the node st
// describes (none on a worker), as its configuration renders them.
func staticPods(st talosnode.NodeStatus) []kubeapi.StaticPod {
	// TODO(lab-talos): once NodeStatus.StaticPods lands, the body is a
	// conversion of each st.StaticPods[i] with kubeapi.StaticPod(p) (same
	// fields), and controlPlaneImages goes. Until then the status carries
	// no control-plane image: each pod runs its default repository at the
	// kubelet image's tag (Talos's default without one), with a fixed
	// config version.
	if !st.ControlPlane {
		return nil
	}
	tag := cmp.Or(st.KubeletVersion, kubeapi.DefaultKubeletVersion)
	var pods []kubeapi.StaticPod
	for component, repository := range controlPlaneImages() {
		pods = append(pods, kubeapi.StaticPod{Component: component, Image: repository + ":" + tag, ConfigVersion: "1"})
	}
	return pods
}

// apiServerVersion is the version the API of cluster reports on /version
// (see kubeapi.Options.Version): the tag of the kube-apiserver image
// configured on the control plane holding the API's VIP, whose apiserver
// answers there; with no VIP owner known (an endpoint that is no VIP, or
// nobody holds it), the lowest tag among the running control planes. ""
// (the binary's version) when none runs.
func (k *kubernetes) apiServerVersion(cluster string, vip netip.Addr) string {
	owner := k.lab.vips.owner(cluster, vip)
	var lowest *version.Version
	lowestTag := ""
	for _, n := range k.lab.fleet.Nodes() {
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
