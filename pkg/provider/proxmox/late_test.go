package proxmox_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/inventory"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
)

// lateProxy stands in front of a lab Proxmox as a pveproxy whose workers
// are all busy: the request call picks is answered 504 at once, before
// the lab sees it, and handed to the lab 1-3 s later, when its client has
// given up on it (the lab's own faults only lose the answer of a request
// already applied). Every other request passes through.
type lateProxy struct {
	srv  *httptest.Server
	lab  *http.Client
	to   string
	call lostCall

	mu        sync.Mutex
	seen      int
	delivered chan struct{} // closed once the late request reached the lab
}

// startLate starts a lateProxy in front of srv delaying call.
func startLate(t *testing.T, srv *labpx.Server, call lostCall) *lateProxy {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(srv.CAPEM)
	p := &lateProxy{
		lab:       &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}},
		to:        srv.URL,
		call:      call,
		delivered: make(chan struct{}),
	}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// late reports whether r is the request to deliver late.
func (p *lateProxy) late(r *http.Request) bool {
	if r.Method != p.call.method || r.URL.Path != p.call.path {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen++
	return p.seen == max(p.call.nth, 1)
}

func (p *lateProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !p.late(r) {
		resp, err := p.forward(r.Context(), r, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		maps.Copy(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return
	}
	http.Error(w, "proxy timeout", http.StatusGatewayTimeout)
	go func() {
		defer close(p.delivered)
		time.Sleep(time.Second + rand.N(2*time.Second)) //nolint:gosec // a delay, not security
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if resp, err := p.forward(ctx, r, body); err == nil {
			_ = resp.Body.Close()
		}
	}()
}

// forward sends r (its body read into body) to the lab.
func (p *lateProxy) forward(ctx context.Context, r *http.Request, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, r.Method, p.to+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = r.Header.Clone()
	return p.lab.Do(req)
}

// wait waits until the late request has reached the lab.
func (p *lateProxy) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.delivered:
	case <-time.After(10 * time.Second):
		t.Fatalf("the late %s %s was never delivered", p.call.method, p.call.path)
	}
}

// lateLab is faultLab (netCluster, faults) whose Cloud talks to the lab
// through a lateProxy delaying call.
func lateLab(t *testing.T, netCluster string, call lostCall, faults ...labnet.Fault) (*pxLab, *lateProxy) {
	t.Helper()
	l := faultLab(t, netCluster, faults...)
	p := startLate(t, l.srv, call)
	cfg := *l.cfg
	px := *cfg.Proxmox
	writePEM(t, filepath.Join(cfg.Dir, "late-ca.pem"), p.srv.Certificate().Raw)
	px.URL, px.TLSVerify = p.srv.URL, config.TLSVerify{CABundle: "late-ca.pem"}
	cfg.Proxmox = &px
	l.cfg = &cfg
	l.connectFast(t)
	return l, p
}

// arrived counts the requests of method to exactly path the lab saw.
func (l *pxLab) arrived(method, path string) int {
	n := 0
	for _, c := range l.srv.Recorder().Calls() {
		if c.Method == method && c.Path == path {
			n++
		}
	}
	return n
}

// A create answered 504 before Proxmox saw it, and applied 1-3 s later
// (a busy pveproxy), is found and adopted: the lab receives it once, and
// a converge and a destroy end with the whole inventory of a fault-free
// run (every VM, pool, SDN object and ISO once). Sending it again when
// the first look finds nothing makes a second request (and, for a cidata
// ISO, one that lands after finalize deleted it).
func TestLateCreate_IsAdoptedNotSentAgain(t *testing.T) {
	t.Parallel()
	const qemu = "/api2/json/nodes/pve1/qemu"
	for _, tc := range []struct {
		netCluster string
		call       lostCall
	}{
		{"", lostCall{"VM create", http.MethodPost, qemu, 2}},
		{"", lostCall{"pool create", http.MethodPost, "/api2/json/pools", 1}},
		{"", lostCall{"cidata upload", http.MethodPost, uploadPath, 2}},
		{"", lostCall{"firewall rule", http.MethodPost, qemu + "/101/firewall/rules", 3}},
		{"", lostCall{"ISO download-url", http.MethodPost, "/api2/json/nodes/pve1/storage/local/download-url", 1}},
		{labSDN, lostCall{"SDN vnet create", http.MethodPost, "/api2/json/cluster/sdn/vnets", 1}},
	} {
		t.Run(tc.call.name, func(t *testing.T) {
			t.Parallel()
			ref := faultLab(t, tc.netCluster)
			wantBuilt, wantDestroyed := ref.lateRun(t)
			l, p := lateLab(t, tc.netCluster, tc.call)
			built, destroyed := l.lateRun(t)
			p.wait(t)
			if n, want := l.arrived(tc.call.method, tc.call.path), ref.arrived(tc.call.method, tc.call.path); n != want {
				t.Errorf("the lab received %d %s %s, a fault-free run %d\nlog:\n%s", n, tc.call.method, tc.call.path, want, l.logs)
			}
			if !strings.Contains(l.logs.String(), "; it was applied, going on") {
				t.Errorf("the late create was not adopted:\n%s", l.logs)
			}
			if diff := inventory.Diff(wantBuilt, built); diff != nil {
				t.Errorf("after the build, against a fault-free run:\n%s\nlog:\n%s", strings.Join(diff, "\n"), l.logs)
			}
			if diff := inventory.Diff(wantDestroyed, destroyed); diff != nil {
				t.Errorf("after destroy, against a fault-free run:\n%s\nlog:\n%s", strings.Join(diff, "\n"), l.logs)
			}
			if vms := l.srv.VMs(); len(vms) != 0 {
				t.Errorf("%d VM(s) left after destroy: %+v", len(vms), vms)
			}
		})
	}
}

// lateRun builds (the managed SDN when the cluster has one, the boot ISO,
// the VMs, finalize) and destroys, returning the whole inventory after
// each; the build's snapshot is taken once every late request could have
// landed.
func (l *pxLab) lateRun(t *testing.T) (built, destroyed inventory.Snapshot) {
	t.Helper()
	if l.cfg.Proxmox.Network.Cluster.SDN != nil {
		if _, err := l.cloud.ReconcileNetwork(t.Context(), networkSpec(l.cfg), &provider.Plan{}); err != nil {
			t.Fatalf("reconcile: %v\nlog:\n%s", err, l.logs)
		}
	}
	if _, err := l.cloud.CreateMachines(t.Context(), l.machineSpecs(t), &provider.Plan{}); err != nil {
		t.Fatalf("create: %v\nlog:\n%s", err, l.logs)
	}
	if err := l.cloud.FinalizeMachines(t.Context(), l.inventory(t), &provider.Plan{}); err != nil {
		t.Fatalf("finalize: %v\nlog:\n%s", err, l.logs)
	}
	built = l.srv.Snapshot()
	if err := l.cloud.DestroyMachines(t.Context(), l.inventory(t), &provider.Plan{}); err != nil {
		t.Fatalf("destroy: %v\nlog:\n%s", err, l.logs)
	}
	if l.cfg.Proxmox.Network.Cluster.SDN != nil {
		if err := l.cloud.DestroyNetwork(t.Context(), &provider.Plan{}); err != nil {
			t.Fatalf("destroy the network: %v\nlog:\n%s", err, l.logs)
		}
	}
	return built, l.srv.Snapshot()
}

// A create answered 504 before Proxmox saw it, whose second look fails
// (the VM's config read answers 500), ends in an error saying whether it
// was applied is unknown, and is not sent again: the late create lands
// and is the one VM of that name, its cidata ISO kept for the next run.
func TestLateCreate_ALookThatFailsIsAnErrorNotASecondCreate(t *testing.T) {
	t.Parallel()
	const qemu = "/api2/json/nodes/pve1/qemu"
	l, p := lateLab(t, "", lostCall{"VM create", http.MethodPost, qemu, 1},
		labnet.Fault{Service: labpx.Service, Method: http.MethodGet, PathPrefix: qemu + "/100/config", Nth: 2, Status: http.StatusInternalServerError})
	specs := l.machineSpecs(t)
	_, err := l.cloud.CreateMachines(t.Context(), specs[:1], &provider.Plan{})
	if err == nil || !strings.Contains(err.Error(), "; whether it was applied is unknown: read the config of VM 100 on pve1") {
		t.Fatalf("create: %v, want the unknown outcome\nlog:\n%s", err, l.logs)
	}
	p.wait(t)
	if n := l.arrived(http.MethodPost, qemu); n != 1 {
		t.Errorf("the lab received %d VM creates, want 1 (the late one)\nlog:\n%s", n, l.logs)
	}
	deadline := time.Now().Add(5 * time.Second)
	for vms := l.srv.VMs(); (len(vms) == 0 || vms[0].Lock != "") && time.Now().Before(deadline); vms = l.srv.VMs() { // its create task runs
		time.Sleep(10 * time.Millisecond)
	}
	if vms := l.srv.VMs(); len(vms) != 1 || vms[0].Name != specs[0].Machine.Hostname {
		t.Errorf("lab VMs %+v, want the late %s alone", vms, specs[0].Machine.Hostname)
	}
	if isos := l.cidataISOs(); len(isos) != 1 {
		t.Errorf("cidata ISOs %v, want the late VM's", isos)
	}
}

// A create proven not applied (a cidata upload answered 503: pveproxy
// answers it before acting, and a streamed upload is not replayed by the
// transport) is sent again at once, not after the late window; a create
// refused with an answer (500) fails at once, sent once.
func TestLateCreate_ARequestNeverAppliedIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path string
		status     int
		wantErr    bool
	}{
		{"upload 503 is sent again", uploadPath, http.StatusServiceUnavailable, false},
		{"VM create 500 fails", "/api2/json/nodes/pve1/qemu", http.StatusInternalServerError, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := faultLab(t, "", labnet.Fault{Service: labpx.Service, Method: http.MethodPost, PathPrefix: tc.path, Nth: 1, Status: tc.status})
			specs := l.machineSpecs(t)
			start := time.Now()
			_, err := l.cloud.CreateMachines(t.Context(), specs[:1], &provider.Plan{})
			if took := time.Since(start); took >= provider.MinLateWindow/2 {
				t.Errorf("the create took %v: a request never applied waited for a late create", took)
			}
			if (err != nil) != tc.wantErr {
				t.Errorf("create: %v, want an error %v", err, tc.wantErr)
			}
			if n := l.arrived(http.MethodPost, tc.path); n != 1+boolInt(!tc.wantErr) {
				t.Errorf("the lab received %d POST %s", n, tc.path)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A cidata upload answered 504 and never applied, while an older ISO of
// that name (of a config since changed, left by a run whose VM is gone)
// is on storage, is not mistaken for applied: after the late window it is
// sent again, and the VM boots from the new config's ISO.
func TestLateCreate_AnOldCidataISOIsNoEvidence(t *testing.T) {
	t.Parallel()
	ref := faultLab(t, "")
	spec := ref.machineSpecs(t)[0]
	if _, err := ref.cloud.CreateMachines(t.Context(), []provider.MachineSpec{spec}, &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	want := ref.cidataSizes()

	l := faultLab(t, "", labnet.Fault{Service: labpx.Service, Method: http.MethodPost, PathPrefix: uploadPath, Nth: 2, Status: http.StatusGatewayTimeout})
	spec = l.machineSpecs(t)[0]
	old := spec
	old.Config = append(bytes.Repeat([]byte("# an older config\n"), 400), spec.Config...)
	if _, err := l.cloud.CreateMachines(t.Context(), []provider.MachineSpec{old}, &provider.Plan{}); err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct{ method, path string }{{"POST", "/nodes/pve1/qemu/100/status/stop"}, {"DELETE", "/nodes/pve1/qemu/100"}} {
		var upid goproxmox.UPID
		if err := l.api().Req(t.Context(), call.method, call.path, nil, &upid); err != nil {
			t.Fatal(err)
		}
		if err := goproxmox.NewTask(upid, l.api()).Wait(t.Context(), 5*time.Millisecond, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if stale := l.cidataSizes(); len(stale) != 1 || slices.Equal(stale, want) {
		t.Fatalf("the older ISO: %v, want one of another size than %v", stale, want)
	}
	if _, err := l.cloud.CreateMachines(t.Context(), []provider.MachineSpec{spec}, &provider.Plan{}); err != nil {
		t.Fatalf("create: %v\nlog:\n%s", err, l.logs)
	}
	if got := l.cidataSizes(); !slices.Equal(got, want) {
		t.Errorf("cidata ISO sizes %v, want the new config's %v\nlog:\n%s", got, want, l.logs)
	}
}

// cidataSizes are the sizes of the cidata ISOs on the lab's storages.
func (l *pxLab) cidataSizes() []uint64 {
	var out []uint64
	for _, v := range l.cidataVolumes() {
		out = append(out, v.Size)
	}
	return out
}
