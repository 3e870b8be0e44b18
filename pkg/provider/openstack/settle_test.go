package openstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/talosc/talosc/pkg/lab/inventory"
	"github.com/talosc/talosc/pkg/lab/labnet"
	labos "github.com/talosc/talosc/pkg/lab/openstack"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/openstack"
	"github.com/talosc/talosc/pkg/state"
)

// lateAt plays a busy API behind a proxy, between talosc and the lab: the
// nth create (POST, 1-based) whose path ends with suffix is answered 504
// at once, and reaches the lab only delay later, where it is applied (a
// create applied after its client gave up), copies times (2: a twin, as a
// create applied late besides the one sent again leaves; both are applied
// before the answer goes, so talosc's first look finds the twin whatever
// the machine's load). Every other
// request goes straight through. It counts the creates talosc sent.
// (A client-side http.RoundTripper: the lab's catalog sends talosc
// straight to the lab's own listener, so a server-side middleware in front
// of it would see only Keystone.)
type lateAt struct {
	suffix      string
	nth, copies int
	delay       time.Duration
	mu          sync.Mutex
	seen        int
	answer      []byte // the lab's answer to the late request
	done        chan struct{}
}

// newLateAt returns a lateAt whose late request is waited for when the
// test ends.
func newLateAt(t *testing.T, suffix string, nth int, delay time.Duration) *lateAt {
	t.Helper()
	l := &lateAt{suffix: suffix, nth: nth, copies: 1, delay: delay, done: make(chan struct{})}
	t.Cleanup(func() {
		select {
		case <-l.done:
		case <-time.After(delay + 10*time.Second):
		}
	})
	return l
}

func (l *lateAt) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, l.suffix) {
		return http.DefaultTransport.RoundTrip(r)
	}
	l.mu.Lock()
	l.seen++
	late := l.seen == l.nth
	l.mu.Unlock()
	if !late {
		return http.DefaultTransport.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if req := r.Clone(context.WithoutCancel(r.Context())); l.copies > 1 {
		l.apply(req, body)
	} else {
		go l.apply(req, body)
	}
	return &http.Response{
		Status: "504 Gateway Timeout", StatusCode: http.StatusGatewayTimeout, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: io.NopCloser(strings.NewReader("gateway timeout")), Request: r,
	}, nil
}

// apply sends the late request to the lab after the delay, copies times.
func (l *lateAt) apply(req *http.Request, body []byte) {
	defer close(l.done)
	time.Sleep(l.delay)
	for range l.copies {
		req.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		l.mu.Lock()
		l.answer = b
		l.mu.Unlock()
	}
}

// sent is how many matching requests talosc sent.
func (l *lateAt) sent() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen
}

// appliedID is the id of what the late request made (its answer's
// {"<kind>": {"id": …}}), once it was applied.
func (l *lateAt) appliedID(t *testing.T) string {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(l.delay + 10*time.Second):
		t.Fatal("the late request was never applied")
	}
	var answer map[string]struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(l.answer, &answer); err != nil || len(answer) != 1 {
		t.Fatalf("the late request's answer %q: %v", l.answer, err)
	}
	for _, v := range answer {
		return v.ID
	}
	return ""
}

func TestCreateMachines_AServerAppliedLateIsAdoptedNotCreatedAgain(t *testing.T) {
	t.Parallel()
	late := newLateAt(t, "/v2.1/servers", 1, 2*time.Second)
	l := newComputeLab(t, labos.Config{}, threeCPs)
	l.connect(t, openstack.Options{HTTPClient: &http.Client{Transport: late}})
	_, got := l.boot(t)
	if n := late.sent(); n != 3 {
		t.Errorf("talosc sent %d server creates for 3 machines: it created again instead of waiting for the late one\n%s", n, l.logs)
	}
	id := late.appliedID(t)
	if !slices.ContainsFunc(got, func(m provider.Machine) bool { return m.ID == id }) {
		t.Errorf("booted %v, not the server %s the late create made\n%s", got, id, l.logs)
	}
	if n := len(l.lab.Inventory().Servers); n != 3 {
		t.Errorf("the lab holds %d servers, want 3", n)
	}
}

func TestReconcileNetwork_APortOrRuleAppliedLateIsAdoptedNotCreatedAgain(t *testing.T) {
	t.Parallel()
	clean := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	clean.reconcile(t, false)
	want := clean.lab.Snapshot()
	for _, c := range []struct {
		suffix string
		nth    int
	}{
		{"/v2.0/ports", 1},                // a reserved port
		{"/v2.0/ports", 4},                // a machine port, among concurrent ones
		{"/v2.0/security-group-rules", 3}, // a rule: found by its content
	} {
		t.Run(fmt.Sprintf("POST %s #%d", c.suffix, c.nth), func(t *testing.T) {
			t.Parallel()
			late := newLateAt(t, c.suffix, c.nth, 2*time.Second)
			l := newNetLab(t, labos.Config{}, openstack.Options{HTTPClient: &http.Client{Transport: late}}, defaultNet)
			if _, err := l.cloud.ReconcileNetwork(t.Context(), l.spec, &provider.Plan{}); err != nil {
				t.Fatalf("reconcile: %v\n%s", err, l.logs)
			}
			late.appliedID(t)
			if got, want := late.sent(), calls(clean.rec, http.MethodPost, c.suffix); got != want {
				t.Errorf("talosc sent %d POST %s, a fault-free run %d: it created again instead of waiting for the late one\n%s", got, c.suffix, want, l.logs)
			}
			if diff := inventory.Diff(want, l.lab.Snapshot()); len(diff) != 0 {
				t.Errorf("whole inventory differs from a fault-free run's:\n%s\n%s", strings.Join(diff, "\n"), l.logs)
			}
		})
	}
}

// calls counts the recorded requests of method to a path ending with suffix.
func calls(rec *labnet.Recorder, method, suffix string) int {
	n := 0
	for _, c := range rec.Calls() {
		if c.Method == method && strings.HasSuffix(c.Path, suffix) {
			n++
		}
	}
	return n
}

// deletes reports whether plan recorded the delete of kind name.
func deletes(plan *provider.Plan, kind, name string) bool {
	return slices.ContainsFunc(plan.Changes(), func(c state.Change) bool {
		return c.Action == state.ActionDelete && c.Kind == kind && c.Name == name
	})
}

// duplicateLab is a compute lab whose every server create loses its
// answer after being applied, where c-controlplane-02 already has an
// owned, unused twin (a server without its port: what a create applied
// late besides the one sent again leaves).
func duplicateLab(t *testing.T, faults ...labnet.Fault) (l *computeLab, specs []provider.MachineSpec, twin string) {
	t.Helper()
	inj := labnet.NewInjector(labnet.Knobs{})
	l = newComputeLab(t, labos.Config{Injector: inj}, threeCPs)
	img, err := l.cloud.EnsureImage(t.Context(), imageSpec(t, ""), &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	specs = l.machineSpecs(t, img)
	m := specs[1].Machine
	dup, err := servers.Create(t.Context(), l.compute, servers.CreateOpts{
		Name: m.Hostname, FlavorRef: "3", ImageRef: img.ID, Networks: "none", Tags: openstack.NodeTags(m, "c"),
	}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	lost := labnet.Fault{Service: labos.Nova, Method: http.MethodPost, PathPrefix: "/v2.1/servers", Status: http.StatusGatewayTimeout, After: true}
	inj.Set(labnet.Knobs{Faults: append(faults, lost)})
	l.lab.Recorder().Reset()
	return l, specs, dup.ID
}

func TestCreateMachines_DeletesTheUnusedOfTwoOwnedServersOfOneName(t *testing.T) {
	t.Parallel()
	l, specs, twin := duplicateLab(t)
	plan := &provider.Plan{}
	got, err := l.cloud.CreateMachines(t.Context(), specs, plan)
	if err != nil || len(got) != 3 {
		t.Fatalf("CreateMachines = %v, %v; want the 3 control planes\n%s", hostnames(got), err, l.logs)
	}
	kept := got[slices.IndexFunc(got, func(m provider.Machine) bool { return m.Hostname == "c-controlplane-02" })].ID
	msg := "openstack: server c-controlplane-02: 2 owned resources of this name (a create applied late): keeping " + kept + ", deleting unused " + twin
	if !strings.Contains(l.logs.String(), msg) {
		t.Errorf("logs lack %q:\n%s", msg, l.logs)
	}
	if !deletes(plan, openstack.KindServer, "c-controlplane-02") {
		t.Errorf("the plan does not record the twin's delete: %v", changeNames(plan.Changes()))
	}
	inv := l.lab.Inventory()
	var names []string
	for _, s := range inv.Servers {
		names = append(names, s.Name)
		if s.ID == twin {
			t.Errorf("the unused twin %s is still there", twin)
		}
	}
	slices.Sort(names)
	if want := []string{"c-controlplane-01", "c-controlplane-02", "c-controlplane-03"}; !slices.Equal(names, want) {
		t.Errorf("the lab holds servers %v, want %v", names, want)
	}
	if len(inv.Volumes) != 3 || len(inv.Ports) != 3 {
		t.Errorf("the lab holds %d volumes and %d ports, want one of each per machine", len(inv.Volumes), len(inv.Ports))
	}
}

func TestCreateMachines_RefusesTwoOwnedServersWhoseUseCannotBeRead(t *testing.T) {
	t.Parallel()
	l, specs, twin := duplicateLab(t, labnet.Fault{Service: labos.Neutron, Method: http.MethodGet, PathPrefix: "/v2.0/ports/", Status: http.StatusForbidden})
	_, err := l.cloud.CreateMachines(t.Context(), specs, &provider.Plan{})
	var made string
	for _, s := range l.lab.Inventory().Servers {
		if s.Name == "c-controlplane-02" && s.ID != twin {
			made = s.ID
		}
	}
	if err == nil || made == "" || !strings.Contains(err.Error(), "server c-controlplane-02: 2 owned resources of this name are in use (") ||
		!strings.Contains(err.Error(), twin) || !strings.Contains(err.Error(), made) {
		t.Fatalf("err = %v; want the refusal naming %s and %s\n%s", err, twin, made, l.logs)
	}
	if n := calls(l.lab.Recorder(), http.MethodDelete, ""); n != 0 {
		t.Errorf("the refusal deleted %d things", n)
	}
}

func TestCreateMachines_AFailedLookAfterALostAnswerFailsWithoutASecondCreate(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{})
	l := newComputeLab(t, labos.Config{Injector: inj}, threeCPs)
	img, err := l.cloud.EnsureImage(t.Context(), imageSpec(t, ""), &provider.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	specs := l.machineSpecs(t, img)
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{
		{Service: labos.Nova, Method: http.MethodPost, PathPrefix: "/v2.1/servers", Nth: 1, Status: http.StatusGatewayTimeout},
		{Service: labos.Nova, Method: http.MethodGet, PathPrefix: "/v2.1/servers/detail", Status: http.StatusForbidden},
	}})
	l.lab.Recorder().Reset()
	_, err = l.cloud.CreateMachines(t.Context(), specs, &provider.Plan{})
	if n := calls(l.lab.Recorder(), http.MethodPost, "/v2.1/servers"); n != 3 {
		t.Errorf("talosc sent %d server creates for 3 machines, want one each: a failed look is no evidence of 'not made'", n)
	}
	if err == nil || !strings.Contains(err.Error(), "find out whether server c-controlplane-0") {
		t.Fatalf("err = %v; want the failed look named", err)
	}
}

func TestReconcileNetwork_DeletesTheUnusedTwinOfANetworkItMade(t *testing.T) {
	t.Parallel()
	clean := newNetLab(t, labos.Config{}, openstack.Options{}, defaultNet)
	clean.reconcile(t, false)
	late := newLateAt(t, "/v2.0/networks", 1, 0)
	late.copies = 2
	l := newNetLab(t, labos.Config{}, openstack.Options{HTTPClient: &http.Client{Transport: late}}, defaultNet)
	plan := &provider.Plan{}
	if _, err := l.cloud.ReconcileNetwork(t.Context(), l.spec, plan); err != nil {
		t.Fatalf("reconcile: %v\n%s", err, l.logs)
	}
	if !strings.Contains(l.logs.String(), "openstack: network c-net: 2 owned resources of this name (a create applied late): keeping ") {
		t.Errorf("the twin was not reported:\n%s", l.logs)
	}
	if !deletes(plan, "openstack:network", "c-net") {
		t.Errorf("the plan does not record the twin's delete: %v", changeNames(plan.Changes()))
	}
	if diff := inventory.Diff(clean.lab.Snapshot(), l.lab.Snapshot()); len(diff) != 0 {
		t.Errorf("whole inventory differs from a fault-free run's:\n%s\n%s", strings.Join(diff, "\n"), l.logs)
	}
}

func TestEnsureImage_DeletesTheEmptyTwinOfTheImageItMade(t *testing.T) {
	t.Parallel()
	late := newLateAt(t, "/v2/images", 1, 0)
	late.copies = 2
	l := newComputeLab(t, labos.Config{}, threeCPs)
	l.connect(t, openstack.Options{HTTPClient: &http.Client{Transport: late}})
	plan := &provider.Plan{}
	img, err := l.cloud.EnsureImage(t.Context(), imageSpec(t, ""), plan)
	if err != nil {
		t.Fatalf("EnsureImage: %v\n%s", err, l.logs)
	}
	if want := "openstack: image " + img.Name + ": 2 owned resources of this name (a create applied late): keeping " + img.ID + ", deleting unused "; !strings.Contains(l.logs.String(), want) {
		t.Errorf("logs lack %q:\n%s", want, l.logs)
	}
	if !deletes(plan, openstack.KindImage, img.Name) {
		t.Errorf("the plan does not record the twin's delete: %v", changeNames(plan.Changes()))
	}
	if imgs := l.lab.Inventory().Images; len(imgs) != 1 || imgs[0].ID != img.ID {
		t.Errorf("the lab holds images %+v, want only %s", imgs, img.ID)
	}
}

func TestReconcileNetwork_ACreateNotMadeIsSentAgainOnlyAfterTheLateWindow(t *testing.T) {
	t.Parallel()
	lost := labnet.Fault{Service: labos.Neutron, Method: http.MethodPost, PathPrefix: "/v2.0/networks", Nth: 1, Status: http.StatusGatewayTimeout}
	l := newNetLab(t, labos.Config{Injector: labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{lost}})}, openstack.Options{}, defaultNet)
	start := time.Now()
	if _, err := l.cloud.ReconcileNetwork(t.Context(), l.spec, &provider.Plan{}); err != nil {
		t.Fatalf("reconcile: %v\n%s", err, l.logs)
	}
	window := provider.LateWindow(5 * time.Second) // newNetLab's request timeout
	if took := time.Since(start); took < window {
		t.Errorf("the reconcile took %s: the network was created again before the late window of %s had passed", took, window)
	}
	if want := "it was not made within " + window.String() + ": creating it again (2 of 3)"; !strings.Contains(l.logs.String(), want) {
		t.Errorf("logs lack %q:\n%s", want, l.logs)
	}
	if n := calls(l.rec, http.MethodPost, "/v2.0/networks"); n != 2 {
		t.Errorf("talosc sent %d network creates, want 2", n)
	}
}
