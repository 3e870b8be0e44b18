package openstack_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/openstack"
)

func TestFaultSecondServerCreateFails(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{
		{Service: openstack.Nova, Method: http.MethodPost, PathPrefix: "/v2.1/servers", Nth: 2, Status: http.StatusInternalServerError},
	}})
	lab := start(t, openstack.Config{Injector: inj})
	c := newClients(t, login(t, lab, "demo", "demo"))
	fx := newFixture(t, c)
	var codes []int
	for _, name := range []string{"n1", "n2", "n3"} {
		_, err := servers.Create(t.Context(), c.compute, fx.serverOpts(name, fx.port(t, c, name), nil), nil).Extract()
		if err != nil {
			wantCode(t, err, http.StatusInternalServerError)
			codes = append(codes, http.StatusInternalServerError)
			continue
		}
		codes = append(codes, http.StatusAccepted)
	}
	if !slices.Equal(codes, []int{202, 500, 202}) || len(lab.Inventory().Servers) != 2 {
		t.Errorf("codes %v, %d servers", codes, len(lab.Inventory().Servers))
	}
}

func TestFaultLatency(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{})
	lab := start(t, openstack.Config{Injector: inj})
	c := newClients(t, login(t, lab, "demo", "demo"))
	inj.Set(labnet.Knobs{Latency: 40 * time.Millisecond})
	began := time.Now()
	must(networks.List(c.network, nil).AllPages(t.Context())).ok(t)
	if d := time.Since(began); d < 40*time.Millisecond {
		t.Errorf("list took %v with 40ms latency", d)
	}
}

func TestFaultHangUntilClientTimeout(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{{Service: openstack.Neutron, Method: http.MethodGet, PathPrefix: "/v2.0/networks", Hang: true}}})
	lab := start(t, openstack.Config{Injector: inj})
	c := newClients(t, login(t, lab, "demo", "demo"))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := networks.List(c.network, nil).AllPages(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the client's deadline, got %v", err)
	}
	eventually(t, "the hung call to be recorded", func() bool {
		return slices.ContainsFunc(lab.Recorder().Calls(), func(c labnet.Call) bool { return c.Path == "/v2.0/networks" && c.Status == 499 })
	})
}

func TestFaultErrorRateIsReplayable(t *testing.T) {
	t.Parallel()
	run := func() []int {
		lab := start(t, openstack.Config{Injector: labnet.NewInjector(labnet.Knobs{ErrorRate: 0.5, Seed: 42})})
		var codes []int
		for range 12 {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, lab.URL+"/compute/", http.NoBody) // no token needed
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			codes = append(codes, resp.StatusCode)
		}
		return codes
	}
	a, b := run(), run()
	if !slices.Equal(a, b) || !slices.Contains(a, http.StatusServiceUnavailable) || !slices.Contains(a, http.StatusOK) {
		t.Errorf("runs differ or are not mixed: %v vs %v", a, b)
	}
}

// BenchmarkStart measures the lab OpenStack's start-up time.
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		lab, err := openstack.Start(b.Context(), openstack.Config{})
		if err != nil {
			b.Fatal(err)
		}
		_ = lab.Close()
	}
}

// BenchmarkListNetworks measures authenticated GETs through the whole stack.
func BenchmarkListNetworks(b *testing.B) {
	lab, err := openstack.Start(b.Context(), openstack.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = lab.Close() }()
	token := login(b, lab, "demo", "demo").Token()
	req, _ := http.NewRequestWithContext(b.Context(), http.MethodGet, lab.URL+"/network/v2.0/networks", http.NoBody)
	req.Header.Set("X-Auth-Token", token)
	for b.Loop() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_ = resp.Body.Close()
	}
}

// TestFaultLateServerCreate: a late server create answers 504 and makes
// nothing then; Nova makes the server LateBy after that answer, from the
// body the client sent.
func TestFaultLateServerCreate(t *testing.T) {
	t.Parallel()
	const lateBy = 300 * time.Millisecond
	inj := labnet.NewInjector(labnet.Knobs{LateBy: lateBy, Faults: []labnet.Fault{
		{Service: openstack.Nova, Method: http.MethodPost, PathPrefix: "/v2.1/servers", Nth: 1, Late: true},
	}})
	t.Cleanup(func() { _ = inj.Close() })
	lab := start(t, openstack.Config{Injector: inj})
	c := newClients(t, login(t, lab, "demo", "demo"))
	fx := newFixture(t, c)
	_, err := servers.Create(t.Context(), c.compute, fx.serverOpts("late", fx.port(t, c, "late"), nil), nil).Extract()
	wantCode(t, err, http.StatusGatewayTimeout)
	if n := len(lab.Inventory().Servers); n != 0 {
		t.Fatalf("%d servers right after the 504, want none yet", n)
	}
	eventually(t, "the late server", func() bool {
		inv := lab.Inventory()
		return len(inv.Servers) == 1 && inv.Servers[0].Name == "late"
	})
}
