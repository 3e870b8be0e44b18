package proxmox_test

import (
	"slices"
	"strings"
	"testing"

	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
)

func TestCreateMachines_PinnedPoolAndMemoryExhaustion(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	l.cfg.Workers[0].Node = "pve2"
	machines, _ := l.createCluster(t)
	for _, m := range machines {
		if m.Pool == "worker" && m.Zone != "pve2" {
			t.Errorf("%s on %s, want the pinned pve2", m.Hostname, m.Zone)
		}
	}

	// 8 GiB nodes less 2 GiB for the host fit one 4 GB VM each.
	small := newLab(t, labpx.Options{DatacenterFirewall: true, Nodes: []labpx.Node{{Name: "pve1", MaxMem: 8 << 30}, {Name: "pve2", MaxMem: 8 << 30}}}, nil, labCluster{})
	specs := small.machineSpecs(t)
	small.srv.Recorder().Reset()
	_, err := small.cloud.CreateMachines(t.Context(), specs, &provider.Plan{})
	want := "no Proxmox node has 4 GB available for c-controlplane-03"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("create on full nodes: %v\nwant %s", err, want)
	}
	small.noMutations(t)
}

func TestCreateMachines_FailedCreateRemovesItsCidata(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	specs := l.machineSpecs(t)[:2]
	l.srv.FailTasks(labpx.TaskFault{Type: "qmcreate", Nth: 1, ExitStatus: "unable to create VM: out of space"})
	machines, err := l.cloud.CreateMachines(t.Context(), specs, &provider.Plan{})
	if err == nil || !strings.Contains(err.Error(), "out of space") || len(machines) != 1 {
		t.Fatalf("machines %+v, err %v", machines, err)
	}
	var isos []string
	for _, node := range []string{"pve1", "pve2"} {
		for _, v := range l.srv.Volumes(node, "local") {
			if strings.Contains(v.VolID, "cidata") {
				isos = append(isos, v.VolID)
			}
		}
	}
	if len(isos) != 1 || !slices.ContainsFunc(l.srv.VMs(), func(vm labpx.VMInfo) bool { return vm.Name == machines[0].Hostname }) {
		t.Errorf("cidata ISOs %v, VMs %+v: want only the created VM's", isos, l.srv.VMs())
	}
}
