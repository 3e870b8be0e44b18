package kubeupgrade

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

func version(t *testing.T, s string) config.Version {
	t.Helper()
	v, err := config.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// node is a node whose components all run v.
func node(host, role, v string) Node {
	cp := role == config.RoleControlPlane
	return Node{Machine: config.Machine{Hostname: host, Role: role}, Images: machineconfig.DefaultImages(v, cp)}
}

// A step moves each static pod over every control plane, then kube-proxy,
// then the control planes' kubelets and the workers'; a component already
// at the step's version (a killed run's) is left alone.
func TestPlanOrdersAndResumes(t *testing.T) {
	t.Parallel()
	nodes := []Node{node("w-1", config.RoleWorker, "v1.34.3"), node("cp-2", config.RoleControlPlane, "v1.34.3"), node("cp-1", config.RoleControlPlane, "v1.34.3")}
	Order(nodes)
	*APIServer.Image(&nodes[0].Images) = machineconfig.DefaultImages("v1.35.4", true).APIServer // cp-1's was moved
	from, err := Lowest(nodes)
	if err != nil || from.String() != "v1.34.3" {
		t.Fatalf("Lowest = %v, %v", from, err)
	}
	steps := Plan(nodes, from, []config.Version{version(t, "v1.35.4"), version(t, "v1.36.1")})
	var got []string
	for _, st := range steps {
		for _, ch := range st.Changes {
			got = append(got, fmt.Sprintf("%d %s %s", st.Number, ch.Component, nodes[ch.Index].Machine.Hostname))
		}
	}
	var want []string
	for s, skip := range []string{"kube-apiserver cp-1", ""} {
		for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
			for _, h := range []string{"cp-1", "cp-2"} {
				if c+" "+h != skip {
					want = append(want, fmt.Sprintf("%d %s %s", s+1, c, h))
				}
			}
		}
		for _, h := range []string{"cp-1", "cp-2", "w-1"} {
			want = append(want, fmt.Sprintf("%d kubelet %s", s+1, h))
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
}

// A pin below what a component runs is refused (I-12).
func TestCheckNoDowngrade(t *testing.T) {
	t.Parallel()
	nodes := []Node{node("cp-1", config.RoleControlPlane, "v1.35.4")}
	if err := CheckNoDowngrade(nodes, version(t, "v1.34.3")); err == nil {
		t.Error("a downgrade was not refused")
	}
	if err := CheckNoDowngrade(nodes, version(t, "v1.35.4")); err != nil {
		t.Errorf("the running version refused: %v", err)
	}
}
