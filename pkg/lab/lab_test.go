package lab_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/factory"
)

func TestLabStatusAndKnobs(t *testing.T) {
	t.Parallel()
	l, control := startWithControl(t)

	c, err := factory.New(l.Factory.URL, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Versions(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Faults set through the control API reach every service.
	knobs, _ := json.Marshal(labnet.Knobs{ErrorRate: 1})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, control.URL+"/knobs", bytes.NewReader(knobs))
	resp, err := control.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT /knobs: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	if _, err := c.Versions(t.Context()); err == nil {
		t.Fatal("error rate 1 did not fail the call")
	}
	// The factory client asks 4 times after a 503.
	st := l.Status()
	if st.Calls != 5 || st.CallsBy["imagefactory"] != 5 || st.Provider != "openstack" || len(st.Services) == 0 {
		t.Fatalf("status = %+v", st)
	}
}

// TestLabNodeKnobs: GET /nodes lists the Talos nodes; PUT
// /nodes/{address}/knobs scripts one node's faults, also before it boots
// (?pending=true): a node told never to boot keeps its API down while its
// neighbour comes up.
func TestLabNodeKnobs(t *testing.T) {
	t.Parallel()
	l, err := lab.Start(t.Context(), lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	control := httptest.NewServer(l.ControlHandler())
	t.Cleanup(control.Close)
	put := func(path, body string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, control.URL+path, strings.NewReader(body))
		resp, err := control.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	nodes := func() []talosnode.NodeStatus {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, control.URL+"/nodes", nil)
		resp, err := control.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []talosnode.NodeStatus
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	c := newOSCluster(t, l, "127.16.79.0/24", 2, 0)
	hosts := c.cfg.Hostnames()
	stuck := c.port(hosts[0].Hostname)
	stuckAddr := stuck.FixedIPs[0].IPAddress
	for path, want := range map[string]int{
		"/nodes/" + stuckAddr + "/knobs":              http.StatusNotFound,
		"/nodes/" + stuckAddr + "/knobs?pending=true": http.StatusAccepted,
		"/nodes/192.0.2.1/knobs?pending=true":         http.StatusBadRequest,
		"/nodes/not-an-address/knobs?pending=true":    http.StatusBadRequest,
	} {
		if got := put(path, `{"neverBoots": true}`); got != want {
			t.Errorf("PUT %s: %d, want %d", path, got, want)
		}
	}
	if got := put("/nodes/"+stuckAddr+"/knobs?pending=true", `{"neverBoots": "yes"}`); got != http.StatusBadRequest {
		t.Errorf("PUT bad JSON: %d, want 400", got)
	}
	c.bootOn(hosts[0], stuck)
	_, healthyAddr := c.boot(hosts[1])
	eventually(t, "the healthy node's API comes up", 10*time.Second, func() error {
		for _, n := range nodes() {
			if n.Address.String() == healthyAddr && n.APIUp {
				return nil
			}
		}
		return errors.New("not up yet")
	})
	if got := put("/nodes/"+healthyAddr+"/knobs", `{"rebootDown": "5s"}`); got != http.StatusNoContent {
		t.Errorf("PUT the knobs of a running node: %d, want 204", got)
	}
	time.Sleep(200 * time.Millisecond) // twenty boot times
	got := nodes()
	if len(got) != 2 || got[0].Address.Compare(got[1].Address) >= 0 {
		t.Fatalf("GET /nodes = %+v, want both nodes by address", got)
	}
	for _, n := range got {
		switch n.Address.String() {
		case stuckAddr:
			if !n.Powered || n.APIUp || !n.Knobs.NeverBoots {
				t.Errorf("the node told never to boot: %+v", n)
			}
		case healthyAddr:
			if !n.APIUp || n.Knobs.RebootDown != 5*time.Second {
				t.Errorf("the healthy node: %+v", n)
			}
		}
	}
}
