package kubeupgrade

// Pull is one image pulled ahead onto one node.
type Pull struct {
	Host, Address, Ref string
	// System: the kubelet's image goes to containerd's system namespace,
	// the static pods' to the CRI's.
	System bool
}

// Pulls are the images the step's changes run, by node: the static pods'
// and the kubelets' (upgrade-k8s's pre-pull; kube-proxy's image is the
// DaemonSet's, pulled by its pods).
func Pulls(nodes []Node, st Step) [][]Pull {
	byNode := map[int][]Pull{}
	var order []int
	for _, ch := range st.Changes {
		if ch.Component == Proxy {
			continue
		}
		n := nodes[ch.Index]
		if _, ok := byNode[ch.Index]; !ok {
			order = append(order, ch.Index)
		}
		byNode[ch.Index] = append(byNode[ch.Index], Pull{Host: n.Machine.Hostname, Address: n.Address, Ref: ch.Image, System: ch.Component == Kubelet})
	}
	out := make([][]Pull, len(order))
	for i, n := range order {
		out[i] = byNode[n]
	}
	return out
}
