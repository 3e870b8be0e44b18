package kube_test

import (
	"net/netip"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/talos/manifests"
)

// checkMetadataPolicy: the metadata-service NetworkPolicy OpenStack control
// planes carry is a valid object for the real API server, in namespace
// default, selecting every pod there and allowing egress everywhere but
// the metadata service.
func checkMetadataPolicy(t *testing.T, srv *kubeapi.Server, k *kube.Client) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(manifests.MetadataPolicy().Contents), &obj); err != nil {
		t.Fatal(err)
	}
	if err := k.Apply(t.Context(), obj, manager); err != nil {
		t.Fatalf("the API server refuses the policy: %v", err)
	}
	np, err := srv.Client().NetworkingV1().NetworkPolicies("default").Get(t.Context(), "deny-metadata-service", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(np.Spec.PodSelector.MatchLabels)+len(np.Spec.PodSelector.MatchExpressions) != 0 ||
		len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeEgress {
		t.Errorf("policy selects %v for %v, want every pod's egress", np.Spec.PodSelector, np.Spec.PolicyTypes)
	}
	for _, tc := range []struct {
		dst  string
		want bool
	}{
		{manifests.MetadataAddress, false},
		{"fe80::a9fe:a9fe", false},
		{"169.254.169.253", true},
		{"10.96.0.10", true},
		{"192.0.2.1", true},
		{"2001:db8::1", true},
	} {
		if got := egressAllowed(t, np, netip.MustParseAddr(tc.dst)); got != tc.want {
			t.Errorf("egress to %s allowed = %v, want %v", tc.dst, got, tc.want)
		}
	}
}

// egressAllowed evaluates the policy's ipBlock peers for dst.
func egressAllowed(t *testing.T, np *networkingv1.NetworkPolicy, dst netip.Addr) bool {
	t.Helper()
	for _, rule := range np.Spec.Egress {
		for _, peer := range rule.To {
			if peer.IPBlock == nil || !netip.MustParsePrefix(peer.IPBlock.CIDR).Contains(dst) {
				continue
			}
			excepted := false
			for _, e := range peer.IPBlock.Except {
				excepted = excepted || netip.MustParsePrefix(e).Contains(dst)
			}
			if !excepted {
				return true
			}
		}
	}
	return false
}
