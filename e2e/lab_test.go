package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/inventory"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/phase"
	osprovider "github.com/talosc/talosc/pkg/provider/openstack"
)

// labKey is the testscript value holding a script's *scriptLab.
type labKey struct{}

// scriptLab is the talosc-lab of one script, started by "lab up" or
// "lab follow".
type scriptLab struct {
	index   int // picks the script's own loopback networks
	lab     *lab.Lab
	real    *realCloud // the followed cloud ("lab follow")
	cluster string
	mark    int // calls recorded before the last "lab mark"
	tasks   int // Proxmox tasks started before the last "lab mark"
	// inventory is the lab Proxmox's inventory at the last "lab mark"
	// (see pveObjects); vmNames names every VMID seen.
	inventory map[string]string
	vmNames   map[int]string
	// saved are the whole inventories "lab inventory save" kept, by name.
	saved map[string]inventory.Snapshot
	// quorum watches the cluster's etcd quorum ("lab etcd watch").
	quorum *quorumWatch
	// late fronts the followed cloud ("lab follow DIR [NAME] late RULE...").
	late *lateProxy
}

// fixedBridge is set once a script started a Proxmox lab whose bridge
// subnet is the fixed 127.20.0.0/24 (a lab that ignores ClusterCIDR on
// Proxmox): a second one would clash.
var fixedBridge atomic.Bool

// clusterNet finds the cluster network in a cluster.yaml the lab wrote.
var clusterNet = regexp.MustCompile(`(?m)^    cidr: (\d+\.\d+\.\d+)\.0/24$`)

// newScriptLab returns the (not yet started) lab of the next script.
func newScriptLab(seq *atomic.Int32) *scriptLab { return &scriptLab{index: int(seq.Add(1))} }

// networks are the lab's cluster and external networks. Every script gets
// its own, so scripts run in parallel; the second octet comes from the pid
// so that two test processes on one machine do not meet either.
func (s *scriptLab) networks() (cluster, external string) {
	base := 100 + os.Getpid()%50
	return fmt.Sprintf("127.%d.%d.0/24", base, s.index%256), fmt.Sprintf("127.%d.%d.0/24", base+50, s.index%256)
}

// cmdLab drives the script's lab:
//
//	lab up PROVIDER DIR [NAME]   start it and write the cluster directory DIR
//	                             (cluster NAME, default "demo"); point the
//	                             phases at its Image Factory, with short waits;
//	                             $CLUSTER_NET is then the first three octets
//	                             of DIR's cluster network
//	lab follow DIR [NAME]        start it following the real OpenStack of
//	                             $TALOSC_REAL_OPENSTACK ([!realopenstack] skip
//	                             first) and write DIR for a new application
//	                             credential of its member user (cluster NAME,
//	                             default e2e-PID-N, in $CLUSTER); both go,
//	                             with anything left tagged for the cluster,
//	                             when the script ends
//	lab mark                     start counting calls (and Proxmox tasks)
//	                             afresh, and record the lab Proxmox's
//	                             inventory
//	lab mutations N              N mutating calls since the mark (listed if not)
//	lab owned N                  N OpenStack resources owned by the cluster
//	lab count KIND N             N of them of KIND (servers, ports, networks,
//	                             subnets, routers, floatingips,
//	                             security_groups, volumes)
//	lab images N                 N images in the lab's Glance
//	lab vms N                    N VMs in the lab's Proxmox
//	lab isos N                   N volumes on its node pve1's storage "local"
//	                             (the boot ISO and the cidata ISOs)
//	lab wait servers N           wait (up to a minute) until N servers are ACTIVE
//	lab wait vms N               wait (up to a minute) until N Proxmox VMs run
//	                             with their guest agent up
//	lab token PATH=PRIVS...      replace the ACL of the lab Proxmox's token by
//	                             these entries; PRIVS is a comma-separated
//	                             list where TalosCluster stands for the
//	                             privileges of that role and -PRIV drops one
//	lab token all                give the token every privilege on / again
//	lab task TYPE STATUS         the next Proxmox task of TYPE ends with exit
//	                             status STATUS (e.g. 'WARNINGS: 1')
//	lab tasks TYPE STATUS N      N Proxmox tasks of TYPE ended with STATUS
//	lab faults KNOB VALUE... | lab faults off
//	                             set the fault knobs of every service (the
//	                             others off), replayably, or stop faulting:
//	                             error-rate R (503 before the request is
//	                             applied), hang-rate R, lost-rate R (a
//	                             mutating request applied, its answer then
//	                             lost: 502, 504, reset or hang), slow-rate R
//	                             with slow DURATION, latency DURATION,
//	                             late-rate R (a mutating request's answer
//	                             lost, 504 or a hang, and the request
//	                             applied late-by DURATION after), seed S;
//	                             off waits for the late requests pending
//	lab rerun-once PROG ARGS...  run PROG; if it fails, log why and run it
//	                             once more, which must succeed
//	lab follow DIR [NAME] late RULE...
//	                             the same behind a proxy that holds the
//	                             first create of each name RULE ("METHOD
//	                             /path" prefix) picks until talosc gave up,
//	                             then applies it (lateproxy_test.go)
//	lab late-applied MIN         that proxy applied at least MIN creates late
//	lab unique-lines N [NAME]    the last command's stdout has N lines (of
//	                             NAME or NAME-*), none twice
//	lab real-owned N             N resources of the followed cloud carrying
//	                             the cluster's ownership tags (listed if not)
//	lab real-images N            N active images talosc manages there
//	lab sdn stage KIND ID K=V... stage (not apply) a change of the lab
//	                             Proxmox's SDN object ID, as another
//	                             administrator would: these fields over its
//	                             staged ones (K= drops a field; a new object
//	                             has only these); KIND is controllers,
//	                             zones, vnets or subnets
//	lab sdn delete KIND ID       stage the deletion of an SDN object
//	lab sdn revert KIND ID       withdraw the object's pending change (its
//	                             staged config is its running one again)
//	lab sdn pending N            N SDN objects with a pending change
//	                             (listed if not)
//	lab sdn pending KIND ID STATE
//	                             the object's pending state is STATE (new,
//	                             changed or deleted)
//	lab sdn applied KIND ID [K=V...]
//	                             the object is applied (running, nothing
//	                             pending) with these fields
//	lab sdn gone KIND ID         the object is neither staged nor running
//	[!] lab vm-config NAME KEY RE
//	                             KEY of Proxmox VM NAME's config as qm
//	                             config shows it (pending changes included)
//	                             matches the regular expression RE
//	lab vm-pending NAME [KEY|-KEY...]
//	                             exactly these config keys of VM NAME wait
//	                             for its next restart, to be set (KEY) or
//	                             deleted (-KEY)
//	lab order TYPE NAME...       the Proxmox tasks of TYPE started since the
//	                             mark were for the VMs NAME..., in this
//	                             order
//	lab knob NAME JSON           replace the fault knobs of the Talos node of
//	                             Proxmox VM NAME (talosnode.Knobs as JSON,
//	                             e.g. {"neverBoots": true};
//	                             {"losesRestoreAtReboot": true} on every
//	                             control plane: a restored etcd is lost at
//	                             the recovered node's next reboot)
//	lab wipe-etcd NAME...        the EPHEMERAL of each Talos node NAME is
//	                             lost out of band: its etcd data without a
//	                             leave, it reboots with its configuration
//	                             (a majority loses quorum, all the etcd;
//	                             lab_restore_test.go)
//	lab volumes N                N Cinder volumes in the project, owned or not
//	lab etcd-members DIR NAME... the etcd members (talosctl etcd members,
//	                             through DIR's talosconfig) are NAME...
//	lab etcd watch               from now on, watch the quorum of the lab's
//	                             etcd of the cluster (lab_etcd_test.go)
//	lab etcd kept NAME...        it never lost quorum since the watch, and
//	                             its members are exactly NAME..., all up
//	lab fault SERVICE PREFIX STATUS
//	                             every SERVICE request under PREFIX fails
//	                             with STATUS (lab faults off ends it)
//	lab lose SERVICE PREFIX STATUS|reset|hang [late]
//	                             the first SERVICE request under PREFIX
//	                             is applied, then its answer lost (late:
//	                             the answer is lost, then it is applied)
//	lab silence NAME             the Talos node NAME stops answering reads
//	                             and applies (lab faults off ends it)
//	lab kube-nodes DIR NAME[:K=V[,K=V]...]...
//	                             the Kubernetes Nodes of DIR's kubeconfig
//	                             are NAME..., each with labels K=V if given
//	lab inventory save NAME      remember the lab cloud's whole inventory
//	                             (every resource, tagged or not, id-free)
//	lab inventory diff NAME      it is the one saved as NAME (the diff if not)
//	lab inventory expect FILE    it is the golden text FILE
//	lab inventory CHANGE...      the objects of the lab cloud's whole
//	                             inventory added, removed or changed since
//	                             the mark ("+|-|~ vm NAME", "~ firewall
//	                             NAME", "- volume VOLID of NAME", "~ pool
//	                             ID", "sdn KIND/ID", "datacenter-firewall")
//	                             are exactly those the regular expressions
//	                             CHANGE match; none: nothing changed
//	lab lost MIN                 at least MIN answers were lost after their
//	                             request was applied, since the mark
//	lab lost late MIN            at least MIN answers were lost before their
//	                             request was applied late, since the mark
//	lab glance impostors|boots-own
//	                             see scriptLab.glance
//	lab rancher|rancher-clusters|rancher-bindings ...
//	                             see scriptLab.rancherCmd
//	lab cordon DIR NAME          cordon Kubernetes Node NAME through DIR's
//	                             kubeconfig (kubectl cordon)
//	lab vips ADDR...             the cluster's API VIPs a control plane
//	                             owns (the addresses its API answers on)
//	                             are exactly ADDR...
//	lab extensions DIR NAME EXT...
//	                             the system extensions Talos node NAME runs
//	                             (talosctl get extensions through DIR's
//	                             talosconfig; "schematic" left out) are
//	                             exactly EXT...
//	lab kube-version DIR WANT    the API of DIR's kubeconfig reports
//	                             gitVersion WANT on /version
//	lab kubelet-versions DIR WANT
//	                             every Kubernetes Node runs kubelet WANT
//	lab mirror-pods DIR COMPONENT WANT-TAG
//	                             every control plane Node has a Ready
//	                             mirror pod of COMPONENT running tag
//	                             WANT-TAG
//	lab talos-versions DIR VERSION NAME...
//	                             talosctl version -n NAME... through DIR's
//	                             talosconfig answers VERSION on every node
//	lab kill-at N | random SEED MAX | call SERVICE PREFIX  CMD ARGS...
//	                             run CMD in a process group of its own and
//	                             SIGKILL the group mid-call (lab_kill_test.go)
//	lab wait-talos DIR NAME VERSION
//	                             waits (2 min) until NAME runs VERSION
//	lab configmap DIR NS/NAME    applies a ConfigMap through DIR's kubeconfig
//	lab newest-backup DIR FILE   copies DIR's newest backup bundle to FILE
//	                             (lab_backup_test.go)
func cmdLab(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 || (neg && args[0] != "vm-config") {
		ts.Fatalf("usage: lab up|follow|mark|argocd-objects|argocd-rancher-id|mutations|owned|count|images|vms|isos|wait|token|task|tasks|faults|rerun-once|real-owned|real-images|late-applied|unique-lines|sdn|vm-config|vm-pending|order|knob|wipe-etcd|volumes|etcd|etcd-members|kube-nodes|silence|fault|lose|inventory|lost|glance|rancher|rancher-clusters|rancher-bindings|rancher-delete|rancher-foreign|cordon|vips|extensions|kube-version|kubelet-versions|mirror-pods|talos-versions|wait-talos|configmap|newest-backup ...")
	}
	s, _ := ts.Value(labKey{}).(*scriptLab)
	switch args[0] {
	case "up":
		s.up(ts, args[1:])
		return
	case "follow":
		s.follow(ts, args[1:])
		return
	}
	if s.lab == nil {
		ts.Fatalf("lab %s: no lab yet (lab up or lab follow first)", args[0])
	}
	switch args[0] {
	case "mark":
		s.mark = len(s.lab.Recorder().Calls())
		if s.lab.Proxmox != nil {
			s.tasks = len(s.lab.Proxmox.Tasks())
		}
		s.markInventory()
	case "mutations":
		s.mutations(ts, count(ts, args))
	case "owned":
		owned := s.simulated(ts).Owned(osprovider.ClusterTags(s.cluster)...)
		want(ts, "owned resources", count(ts, args), sum(owned), fmt.Sprint(owned))
	case "count":
		if len(args) != 3 {
			ts.Fatalf("usage: lab count KIND N")
		}
		owned := s.simulated(ts).Owned(osprovider.ClusterTags(s.cluster)...)
		want(ts, "owned "+args[1], count(ts, args[1:]), owned[args[1]], fmt.Sprint(owned))
	case "images":
		images := s.simulated(ts).Inventory().Images
		want(ts, "images", count(ts, args), len(images), fmt.Sprint(images))
	case "vms":
		vms := s.proxmox(ts).VMs()
		want(ts, "VMs", count(ts, args), len(vms), fmt.Sprint(vms))
	case "isos":
		var isos []string
		for _, v := range s.proxmox(ts).Volumes("pve1", "local") { // the lab's one node and ISO storage
			isos = append(isos, v.VolID)
		}
		want(ts, "ISO volumes", count(ts, args), len(isos), fmt.Sprint(isos))
	case "wait":
		if len(args) != 3 || (args[1] != "servers" && args[1] != "vms") {
			ts.Fatalf("usage: lab wait servers|vms N")
		}
		if args[1] == "vms" {
			s.waitVMs(ts, count(ts, args[1:]))
			return
		}
		s.waitServers(ts, count(ts, args[1:]))
	case "token":
		s.token(ts, args[1:])
	case "task":
		if len(args) != 3 {
			ts.Fatalf("usage: lab task TYPE STATUS")
		}
		s.proxmox(ts).FailTasks(proxmox.TaskFault{Type: args[1], Nth: 1, ExitStatus: args[2]})
	case "tasks":
		if len(args) != 4 {
			ts.Fatalf("usage: lab tasks TYPE STATUS N")
		}
		var ended []string
		for _, t := range s.proxmox(ts).Tasks() {
			if t.Type == args[1] && !t.Running && t.ExitStatus == args[2] {
				ended = append(ended, t.UPID)
			}
		}
		want(ts, args[1]+" tasks ending "+args[2], count(ts, args[2:]), len(ended), fmt.Sprint(ended))
	case "faults":
		s.faults(ts, args[1:])
	case "rerun-once":
		rerunOnce(ts, args[1:])
	case "late-applied":
		s.lateApplied(ts, args[1:])
	case "unique-lines":
		uniqueLines(ts, args[1:])
	case "real-owned", "real-images":
		s.realCount(ts, args)
	case "sdn":
		s.sdn(ts, args[1:])
	case "vm-config", "vm-pending":
		s.vmConfig(ts, neg, args)
	case "order":
		s.order(ts, args[1:])
	case "knob":
		s.knob(ts, args[1:])
	case "wipe-etcd":
		s.wipeEtcd(ts, args[1:])
	case "volumes":
		volumes := s.simulated(ts).Inventory().Volumes
		want(ts, "volumes (owned or not)", count(ts, args), len(volumes), fmt.Sprint(volumes))
	case "etcd":
		s.etcdCmd(ts, args[1:])
	case "etcd-members":
		etcdMembers(ts, args[1:])
	case "kube-nodes":
		kubeNodes(ts, args[1:])
	case "argocd-objects":
		s.argocdObjects(ts, args)
	case "argocd-rancher-id":
		s.argocdRancherID(ts, args)
	case "silence":
		s.silence(ts, args[1:])
	case "fault":
		s.fault(ts, args[1:])
	case "lose":
		s.lose(ts, args[1:])
	case "inventory":
		s.inventoryChanges(ts, args[1:])
	case "lost":
		s.lostAnswers(ts, args[1:])
	case "glance":
		s.glance(ts, args[1:])
	case "rancher", "rancher-clusters", "rancher-bindings", "rancher-delete", "rancher-foreign":
		s.rancherCmd(ts, args)
	case "cordon":
		cordon(ts, args[1:])
	case "vips":
		s.ownedVIPs(ts, args[1:])
	case "extensions":
		s.extensions(ts, args[1:])
	case "kube-version":
		kubeVersion(ts, args[1:])
	case "kubelet-versions":
		kubeletVersions(ts, args[1:])
	case "mirror-pods":
		mirrorPods(ts, args[1:])
	case "talos-versions":
		s.talosVersions(ts, args[1:])
	case "keep", "kept":
		keepFile(ts, args[1:], args[0] == "kept")
	case "kill-at":
		s.killAt(ts, args[1:])
	case "wait-talos":
		s.waitTalos(ts, args[1:])
	case "configmap":
		configMap(ts, args[1:])
	case "newest-backup":
		newestBackup(ts, args[1:])
	default:
		ts.Fatalf("lab %s: unknown subcommand", args[0])
	}
}

// simulated returns the lab's simulated OpenStack.
func (s *scriptLab) simulated(ts *testscript.TestScript) *openstack.Cloud {
	if s.lab.OpenStack == nil {
		ts.Fatalf("this lab simulates no OpenStack (lab up openstack)")
	}
	return s.lab.OpenStack
}

// realCount checks "lab real-owned N" and "lab real-images N".
func (s *scriptLab) realCount(ts *testscript.TestScript, args []string) {
	if s.real == nil {
		ts.Fatalf("lab %s: this lab follows no real OpenStack (lab follow)", args[0])
	}
	n := count(ts, args)
	if args[0] == "real-images" {
		got, err := s.real.images(context.Background())
		ts.Check(err)
		want(ts, "managed images in the real cloud", n, got, "")
		return
	}
	owned, err := s.real.owned(context.Background())
	ts.Check(err)
	want(ts, "resources owned in the real cloud", n, sum(owned), fmt.Sprint(owned))
}

// waitServers waits until the lab's OpenStack has n ACTIVE servers.
func (s *scriptLab) waitServers(ts *testscript.TestScript, n int) {
	cloud := s.simulated(ts)
	active := func() int {
		got := 0
		for _, srv := range cloud.Inventory().Servers {
			if srv.Status == "ACTIVE" {
				got++
			}
		}
		return got
	}
	deadline := time.Now().Add(time.Minute)
	for active() < n {
		if time.Now().After(deadline) {
			ts.Fatalf("%d ACTIVE servers after a minute, want %d", active(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *scriptLab) up(ts *testscript.TestScript, args []string) {
	withArgoCD := len(args) > 0 && args[0] == "--argocd"
	if withArgoCD {
		args = args[1:]
	}
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: lab up [--argocd] PROVIDER DIR [NAME]")
	}
	if s.lab != nil {
		ts.Fatalf("lab up: this script's lab is already up")
	}
	s.cluster = "demo"
	if len(args) == 3 {
		s.cluster = args[2]
	}
	clusterCIDR, externalCIDR := s.networks()
	s.start(ts, lab.Options{Provider: args[0], ClusterCIDR: clusterCIDR, ExternalCIDR: externalCIDR, ArgoCD: withArgoCD})
	_, err := s.lab.WriteClusterDir(ts.MkAbs(args[1]), s.cluster)
	ts.Check(err)
	// $CLUSTER_NET is the first three octets of the cluster network the
	// directory names (the API VIP is $CLUSTER_NET.2 on Proxmox).
	m := clusterNet.FindStringSubmatch(ts.ReadFile(args[1] + "/cluster.yaml"))
	if m == nil {
		ts.Fatalf("lab up: %s/cluster.yaml names no cluster network", args[1])
	}
	ts.Setenv("CLUSTER_NET", m[1])
	if args[0] == "proxmox" && m[1] == "127.20.0" && !fixedBridge.CompareAndSwap(false, true) {
		ts.Fatalf("lab up proxmox: another script of this process has a Proxmox lab on the fixed bridge subnet 127.20.0.0/24; keep the Proxmox scenarios in one script")
	}
	// The lab's machines boot in 200 ms: poll every 750 ms, not every 15 s.
	s.pointPhases(ts, "0.05")
}

// start starts the script's lab, whose machines boot in 200 ms, until the
// script ends.
func (s *scriptLab) start(ts *testscript.TestScript, o lab.Options) {
	o.NodesBoot, o.Logf = 200*time.Millisecond, ts.Logf
	l, err := lab.Start(context.Background(), o)
	ts.Check(err)
	ts.Defer(func() {
		if err := l.Close(); err != nil {
			ts.Logf("lab close: %v", err)
		}
	})
	s.lab = l
}

// pointPhases scales the phases' waits by timeScale (a test-only knob:
// the scripts that make a node never boot fail in seconds; talosc warns)
// and names the lab's Image Factory in $LAB_FACTORY and its OpenStack's
// identity URL in $LAB_OPENSTACK_URL (cluster.yaml names them already:
// talos.image_factory, openstack.url).
func (s *scriptLab) pointPhases(ts *testscript.TestScript, timeScale string) {
	ts.Setenv("LAB_FACTORY", s.lab.Factory.URL)
	if s.lab.OpenStack != nil {
		ts.Setenv("LAB_OPENSTACK_URL", s.lab.OpenStack.AuthURL())
	}
	ts.Setenv(phase.EnvTimeScale, timeScale)
}

// mutations checks the number of calls since the mark that change state.
// Two kinds of POST only look like changes: Keystone issuing a token (every
// process authenticates) and the Image Factory registering a schematic it
// already has (content-addressed: same schematic, same id).
func (s *scriptLab) mutations(ts *testscript.TestScript, n int) {
	since := s.lab.Recorder().Calls()[s.mark:]
	changes := slices.DeleteFunc(since, func(c labnet.Call) bool {
		return !c.Mutating() || onlyLooksLikeChange(c)
	})
	var list strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&list, "\n  %s %s %s -> %d", c.Service, c.Method, c.Path, c.Status)
	}
	want(ts, "mutating calls since the mark", n, len(changes), list.String())
}

// lostAnswers checks "lab lost MIN": at least MIN requests since the mark
// were applied and their answers then lost (labnet.Call.Lost), so a
// lost-answer scenario provably met what it is about. It prints them.
func (s *scriptLab) lostAnswers(ts *testscript.TestScript, args []string) {
	if len(args) != 1 && (len(args) != 2 || args[0] != "late") {
		ts.Fatalf("usage: lab lost [late] MIN")
	}
	least, err := strconv.Atoi(args[len(args)-1])
	ts.Check(err)
	late := args[0] == "late"
	var lost []string
	for _, c := range s.lab.Recorder().Calls()[s.mark:] {
		if (c.Lost && !late) || (c.Late && late) {
			lost = append(lost, fmt.Sprintf("%s %s %s -> %d", c.Service, c.Method, c.Path, c.Status))
		}
	}
	what := map[bool]string{false: "after the request was applied", true: "before the request was applied late"}[late]
	fmt.Fprintf(ts.Stdout(), "%d answers lost %s:\n  %s\n", len(lost), what, strings.Join(lost, "\n  "))
	if len(lost) < least {
		ts.Fatalf("%d answers lost %s since the mark, want at least %d: the scenario lost nothing to recover from", len(lost), what, least)
	}
}

func onlyLooksLikeChange(c labnet.Call) bool {
	switch c.Service + " " + c.Method + " " + c.Path {
	case "keystone POST /v3/auth/tokens", "imagefactory POST /schematics":
		return true
	default:
		return false
	}
}

func (s *scriptLab) faults(ts *testscript.TestScript, args []string) {
	const usage = "usage: lab faults off | lab faults KNOB VALUE... (error-rate, hang-rate, lost-rate, late-rate, slow-rate R; slow, latency, late-by DURATION; seed S)"
	if len(args) == 1 && args[0] == "off" {
		s.lab.Injector().Set(labnet.Knobs{})
		s.awaitLate(ts)
		return
	}
	if len(args) == 0 || len(args)%2 != 0 {
		ts.Fatalf(usage)
	}
	var k labnet.Knobs
	rates := map[string]*float64{"error-rate": &k.ErrorRate, "hang-rate": &k.HangRate, "lost-rate": &k.LostRate, "late-rate": &k.LateRate, "slow-rate": &k.SlowRate}
	durations := map[string]*time.Duration{"slow": &k.Slow, "latency": &k.Latency, "late-by": &k.LateBy}
	for i := 0; i < len(args); i += 2 {
		var err error
		name, v := args[i], args[i+1]
		switch {
		case rates[name] != nil:
			*rates[name], err = strconv.ParseFloat(v, 64)
		case durations[name] != nil:
			*durations[name], err = time.ParseDuration(v)
		case name == "seed":
			k.Seed, err = strconv.ParseUint(v, 10, 64)
		default:
			ts.Fatalf("lab faults: unknown knob %q; %s", name, usage)
		}
		if err != nil {
			ts.Fatalf("lab faults %s %s: %v", name, v, err)
		}
	}
	ts.Check(lab.ValidateKnobs(k))
	s.lab.Injector().Set(k)
}

// rerunOnce runs "lab rerun-once PROG ARGS...": PROG, and once more if
// it failed (a user's rerun after a failed run); the second must succeed.
func rerunOnce(ts *testscript.TestScript, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: lab rerun-once PROG ARGS...")
	}
	err := ts.Exec(args[0], args[1:]...)
	if err == nil {
		return
	}
	ts.Logf("RERUN: %s failed the first time (%v); its stderr:\n%s", strings.Join(args, " "), err, ts.ReadFile("stderr"))
	if err := ts.Exec(args[0], args[1:]...); err != nil {
		ts.Fatalf("%s failed again on the rerun: %v\nstderr:\n%s", strings.Join(args, " "), err, ts.ReadFile("stderr"))
	}
}

// count parses the N of "lab SUBCOMMAND N".
func count(ts *testscript.TestScript, args []string) int {
	if len(args) != 2 {
		ts.Fatalf("usage: lab %s N", args[0])
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	return n
}

func want(ts *testscript.TestScript, what string, n, got int, detail string) {
	if got != n {
		ts.Fatalf("%d %s, want %d: %s", got, what, n, detail)
	}
}

func sum(m map[string]int) int {
	total := 0
	for _, v := range m {
		total += v
	}
	return total
}

// knob sets the fault knobs of a Talos node through the lab's control API
// ("lab knob NAME JSON"), finding the node by hostname.
func (s *scriptLab) knob(ts *testscript.TestScript, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lab knob NAME JSON")
	}
	addr := s.nodeAddress(ts, args[0])
	rec := httptest.NewRecorder()
	s.lab.ControlHandler().ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodPut, "/nodes/"+addr+"/knobs", strings.NewReader(args[1])))
	if rec.Code != http.StatusNoContent {
		ts.Fatalf("lab knob: PUT the knobs of %s (%s): %d %s", args[0], addr, rec.Code, rec.Body)
	}
}

// nodeAddress is the address of the Talos node called name, from the
// lab's control API.
func (s *scriptLab) nodeAddress(ts *testscript.TestScript, name string) string {
	rec := httptest.NewRecorder()
	s.lab.ControlHandler().ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/nodes", http.NoBody))
	var nodes []struct{ Address, Hostname string }
	if err := json.Unmarshal(rec.Body.Bytes(), &nodes); err != nil {
		ts.Fatalf("GET /nodes: %v: %s", err, rec.Body)
	}
	for _, n := range nodes {
		if n.Hostname == name {
			return n.Address
		}
	}
	ts.Fatalf("no Talos node %s: %s", name, rec.Body)
	return ""
}
