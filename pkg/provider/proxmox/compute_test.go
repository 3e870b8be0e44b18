package proxmox_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/proxmox"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/naming"
)

// userData is the machine config a test machine boots from.
func userData(host string) []byte {
	return fmt.Appendf(nil, "version: v1alpha1\nmachine:\n  network:\n    hostname: %s\n", host)
}

// machineSpecs are every desired machine of the lab cluster with the boot
// ISO the image phase ensured.
func (l *pxLab) machineSpecs(t *testing.T) []provider.MachineSpec {
	t.Helper()
	img, err := l.ensureISO(t, isoSpec(t), &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	var specs []provider.MachineSpec
	for _, m := range l.cfg.Hostnames() {
		specs = append(specs, provider.MachineSpec{Machine: m, Config: userData(m.Hostname), Image: img})
	}
	return specs
}

// createCluster creates the lab cluster's 3 control planes and 2 workers
// and forgets the calls it made.
func (l *pxLab) createCluster(t *testing.T) ([]provider.Machine, *provider.Plan) {
	t.Helper()
	specs := l.machineSpecs(t)
	l.srv.Recorder().Reset()
	plan := &provider.Plan{}
	machines, err := l.cloud.CreateMachines(t.Context(), specs, plan)
	if err != nil {
		t.Fatal(err)
	}
	l.srv.Recorder().Reset()
	return machines, plan
}

func (l *pxLab) inventory(t *testing.T) *provider.Inventory {
	t.Helper()
	inv, err := l.cloud.Inventory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// api is a go-proxmox client of the lab for arranging foreign objects.
func (l *pxLab) api() *goproxmox.Client {
	return goproxmox.NewClient(l.srv.APIURL, goproxmox.WithAPIToken(tokenID, tokenSecret), goproxmox.WithHTTPClient(l.srv.HTTPClient()))
}

// post runs a POST outside talosc and waits for its task.
func (l *pxLab) post(t *testing.T, path string, body any) {
	t.Helper()
	var upid goproxmox.UPID
	if err := l.api().Req(t.Context(), "POST", path, jsonBody(t, body), &upid); err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	if upid != "" {
		if err := goproxmox.NewTask(upid, l.api()).Wait(t.Context(), 5*time.Millisecond, 10*time.Second); err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
	}
}

func jsonBody(t *testing.T, body any) []byte {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func vmid(t *testing.T, m provider.Machine) int {
	t.Helper()
	id, err := strconv.Atoi(m.ID)
	if err != nil {
		t.Fatalf("machine %s: id %q", m.Hostname, m.ID)
	}
	return id
}

func summary(changes []state.Change) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = fmt.Sprintf("%s %s %s (%s)", c.Action, c.Kind, c.Name, c.Detail)
	}
	return out
}

func TestCreateMachines_EverySettingCidataFirewallPlacement(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	machines, plan := l.createCluster(t)
	if len(machines) != 5 {
		t.Fatalf("created %d machines, want 5: %+v", len(machines), machines)
	}
	byHost := map[string]labpx.VMInfo{}
	for _, vm := range l.srv.VMs() {
		byHost[vm.Name] = vm
	}
	cpNodes := map[string]int{}
	for _, m := range machines {
		vm, ok := byHost[m.Hostname]
		if !ok || strconv.Itoa(vm.VMID) != m.ID || vm.Node != m.Zone {
			t.Fatalf("machine %+v has no VM (VMs %+v)", m, l.srv.VMs())
		}
		if !vm.Running || vm.Pool != "taloscluster-c" {
			t.Errorf("%s: running %v, pool %q", m.Hostname, vm.Running, vm.Pool)
		}
		if m.Role == config.RoleControlPlane {
			cpNodes[vm.Node]++
		}
		c := vm.Config
		cidata := "local:iso/" + proxmox.CidataFile("c", m.Hostname)
		mac := naming.MAC("c", m.Hostname, 0)
		want := map[string]string{
			"name": m.Hostname, "description": "managed-by=taloscluster cluster=c",
			"tags": "cluster_c;pool_" + m.Pool + ";role_" + m.Role + ";taloscluster", "cores": "2", "memory": "4096",
			"cpu": "host", "ostype": "l26", "machine": "q35", "bios": "ovmf", "scsihw": "virtio-scsi-single",
			"ide3": cidata + ",media=cdrom", "agent": "enabled=1", "onboot": "1", "boot": "order=scsi0;ide2",
			"smbios1": "uuid=" + uuid.NewSHA1(uuid.NameSpaceDNS, []byte("taloscluster:c:"+m.Hostname)).String(),
		}
		for k, v := range want {
			if c[k] != v {
				t.Errorf("%s: %s = %q, want %q", m.Hostname, k, c[k], v)
			}
		}
		for k, parts := range map[string][]string{
			"efidisk0": {"local-lvm:vm-" + m.ID + "-disk-", "efitype=4m", "pre-enrolled-keys=0"},
			"scsi0":    {"local-lvm:vm-" + m.ID + "-disk-", "size=20G"},
			"ide2":     {"local:iso/", ".iso", "media=cdrom"},
			"net0":     {"virtio=" + strings.ToUpper(mac), "bridge=vmbr0", "firewall=1"},
		} {
			for _, p := range parts {
				if !strings.Contains(strings.ToUpper(c[k]), strings.ToUpper(p)) {
					t.Errorf("%s: %s = %q lacks %q", m.Hostname, k, c[k], p)
				}
			}
		}
		if strings.Contains(c["net0"], "mtu=") {
			t.Errorf("%s: net0 %q sets an MTU", m.Hostname, c["net0"])
		}
		volid, nc, err := l.srv.CidataISO(vm.VMID)
		if err != nil || volid != cidata {
			t.Fatalf("%s: cidata %q: %v", m.Hostname, volid, err)
		}
		if string(nc.UserData()) != string(userData(m.Hostname)) || !strings.Contains(string(nc.MetaData()), "local-hostname: "+m.Hostname) {
			t.Errorf("%s: cidata user-data %q meta-data %q", m.Hostname, nc.UserData(), nc.MetaData())
		}
		checkFirewall(t, vm, []string{"icmp", "tcp/80 from anywhere", "tcp/443 from anywhere", "tcp/6443 from 127.0.0.0/8", "tcp from 127.20.0.0/24", "udp from 127.20.0.0/24"})
	}
	if cpNodes["pve1"] != 2 || cpNodes["pve2"] != 1 {
		t.Errorf("control planes per node %v, want pve1: 2, pve2: 1 (spread, lowest name first)", cpNodes)
	}
	got := summary(plan.Changes())
	for _, want := range []string{
		"create proxmox:pool taloscluster-c (comment managed-by=taloscluster cluster=c)",
		"create proxmox:vm c-controlplane-01 (node pve1, 2 cores, 4 GB, 20 GB)",
		"create proxmox:vm c-controlplane-02 (node pve2, 2 cores, 4 GB, 20 GB)",
		"create proxmox:firewall c-worker-02 (policy, 6 rules added, 0 deleted)",
		"update proxmox:vm c-worker-01 (start the new VM)",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("changes lack %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if len(got) != 16 {
		t.Errorf("%d changes, want 16 (pool, 5 × VM, firewall, start):\n%s", len(got), strings.Join(got, "\n"))
	}
}

// checkFirewall checks a VM's firewall options and that its enabled rules
// are exactly want, each with talosc's comment.
func checkFirewall(t *testing.T, vm labpx.VMInfo, want []string) {
	t.Helper()
	o := vm.FirewallOptions
	if o["enable"] != "1" || o["policy_in"] != "DROP" || o["policy_out"] != "ACCEPT" || o["dhcp"] != "1" {
		t.Errorf("%s: firewall options %v", vm.Name, o)
	}
	var got []string
	for _, r := range vm.FirewallRules {
		if !strings.HasPrefix(r["comment"], proxmox.CommentPrefix) {
			continue
		}
		s := r["proto"]
		if r["dport"] != "" {
			s += "/" + r["dport"]
		}
		if s != "icmp" {
			s += " from " + cmpOr(r["source"], "anywhere")
		}
		if r["enable"] != "1" || r["type"] != "in" || r["action"] != "ACCEPT" {
			t.Errorf("%s: rule %v", vm.Name, r)
		}
		got = append(got, s)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s: rules\n%v\nwant\n%v", vm.Name, got, want)
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestCreateMachines_DryRunPlansEverythingMutatesNothing(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	specs := l.machineSpecs(t)
	for i := range specs {
		specs[i].Image = provider.Image{} // a dry run of a fresh cluster has no ISO yet
	}
	l.srv.Recorder().Reset()
	plan := &provider.Plan{DryRun: true}
	machines, err := l.cloud.CreateMachines(t.Context(), specs, plan)
	if err != nil {
		t.Fatal(err)
	}
	l.noMutations(t)
	if len(machines) != 5 || len(l.srv.VMs()) != 0 {
		t.Errorf("machines %+v, VMs %+v", machines, l.srv.VMs())
	}
	got := summary(plan.Changes())
	if len(got) != 16 || !slices.Contains(got, "create proxmox:firewall c-controlplane-01 (policy, 6 rules added, 0 deleted)") {
		t.Errorf("dry-run changes:\n%s", strings.Join(got, "\n"))
	}
}

func TestInventory_OwnershipAndAddresses(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	machines, _ := l.createCluster(t)
	cp1 := machines[0]
	// The guest agent reports the VIP and a link-local address too.
	if err := l.srv.SetGuestAgent(vmid(t, cp1), labpx.GuestInterface{Name: "eth0", Addrs: []netip.Prefix{
		netip.MustParsePrefix("127.20.0.2/24"), netip.MustParsePrefix("169.254.3.4/32"), netip.MustParsePrefix("127.20.0.11/24"),
	}}); err != nil {
		t.Fatal(err)
	}
	// A same-named VM outside the pool, with every tag, is not ours.
	l.post(t, "/nodes/pve1/qemu", map[string]any{"vmid": 900, "name": cp1.Hostname, "tags": "taloscluster;cluster_c;role_controlplane;pool_controlplane"})
	// Neither is an untagged VM inside the pool.
	l.post(t, "/nodes/pve2/qemu", map[string]any{"vmid": 901, "name": "c-worker-01", "pool": "taloscluster-c"})
	l.srv.Recorder().Reset()
	inv := l.inventory(t)
	l.noMutations(t)
	if got := inv.Hostnames(); !slices.Equal(got, []string{"c-controlplane-01", "c-controlplane-02", "c-controlplane-03", "c-worker-01", "c-worker-02"}) {
		t.Fatalf("inventory %v", got)
	}
	for _, m := range inv.Machines {
		i := slices.IndexFunc(machines, func(x provider.Machine) bool { return x.Hostname == m.Hostname })
		if m.ID != machines[i].ID || m.Zone != machines[i].Zone || m.Role != machines[i].Role || m.Pool != machines[i].Pool || m.Status != "running" || m.DiskGB != 20 {
			t.Errorf("inventory %+v, created %+v", m, machines[i])
		}
	}
	if got, _ := inv.Find(cp1.Hostname); got.Address != netip.MustParseAddr("127.20.0.11") {
		t.Errorf("%s address %v, want 127.20.0.11 (not the VIP nor the link-local anchor)", cp1.Hostname, got.Address)
	}
	if got, _ := inv.Find("c-worker-01"); got.Address.IsValid() {
		t.Errorf("c-worker-01 address %v before its agent answers", got.Address)
	}
	if n := len(l.srv.Recorder().Calls()); n > 2+5 {
		t.Errorf("inventory made %d calls, want 2 pool reads and one agent read per running VM", n)
	}
}

// A cidata upload answered 503 (it is streamed, so the retrying transport
// cannot replay it) is uploaded again: the ISO is in memory and
// an upload under the same name overwrites.
func TestCreateMachines_RetriesATransientCidataUpload(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{
		{Service: labpx.Service, Method: http.MethodPost, PathPrefix: "/api2/json/nodes/pve1/storage/local/upload", Nth: 1, Status: http.StatusServiceUnavailable},
	}})
	o := twoNodes()
	o.Injector = inj
	l := newLab(t, o, nil, labCluster{})
	machines, _ := l.createCluster(t)
	if len(machines) != 5 {
		t.Fatalf("created %d machines, want 5", len(machines))
	}
	if !strings.Contains(l.logs.String(), " to local on pve1: 503 Service Unavailable; retrying (1 of 4)") {
		t.Errorf("no retry was logged:\n%s", l.logs)
	}
}
