package lab

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/lab/vip"
)

// Status is what "talosc-lab status" shows.
type Status struct {
	Provider     string         `json:"provider"`
	Uptime       string         `json:"uptime"`
	Services     []Endpoint     `json:"services"`
	Calls        int            `json:"calls"`
	Mutations    int            `json:"mutations"`
	CallsBy      map[string]int `json:"callsByService"`
	BusyDuration string         `json:"busy"` // see labnet.Recorder.Busy
	// Lost and Late count the calls whose answer was lost after (Lost)
	// or before (Late) the request was applied; LatePending the late
	// requests not applied yet.
	Lost        int `json:"lost"`
	Late        int `json:"late"`
	LatePending int `json:"latePending"`
	// VIPs are the clusters' API VIPs and their owners.
	VIPs []vip.Status `json:"vips,omitempty"`
}

// Status reports the lab's services and call counts.
func (l *Lab) Status() Status {
	calls := l.rec.Calls()
	by := map[string]int{}
	var lost, late int
	for _, c := range calls {
		by[c.Service]++
		lost += btoi(c.Lost)
		late += btoi(c.Late)
	}
	return Status{
		Provider:     l.opts.Provider,
		Uptime:       time.Since(l.started).Round(time.Second).String(),
		Services:     l.Services(),
		Calls:        len(calls),
		Mutations:    len(l.rec.Mutations()),
		CallsBy:      by,
		BusyDuration: l.rec.Busy().String(),
		Lost:         lost,
		Late:         late,
		LatePending:  l.inj.Pending(),
		VIPs:         l.vips.Status(),
	}
}

// ControlHandler serves the lab's control API:
//
//   - GET /status: Status.
//   - GET /calls: every recorded call.
//   - PUT /knobs: the API faults of every service (JSON labnet.Knobs;
//     latency, slow and lateBy are Go durations, "25s", or nanoseconds),
//     204 once set, 400 for knobs ValidateKnobs refuses. Late requests
//     already decided are still applied.
//   - GET /nodes: every Talos node's talosnode.NodeStatus, by address.
//   - PUT /nodes/{address}/knobs: one node's scripted faults, replacing
//     its knobs (JSON talosnode.Knobs, e.g. {"neverBoots": true},
//     {"resetFails": "disk busy"}, {"resetHangs": true},
//     {"rebootHangs": true}, {"drainBlocked": true},
//     {"neverLeavesEtcd": true}, {"rebootDown": "30s"}: a Go duration);
//     204 once set (drainBlocked's budget included, for a node its
//     Kubernetes knows), 404 when no node runs at the address, 400 for bad
//     JSON or an address outside 127.0.0.0/8, 500 when the Kubernetes side
//     failed. With ?pending=true the knobs of an address without a node
//     wait for the next node that boots there (202).
//     {"losesRestoreAtReboot": true} loses a recovered etcd at the
//     recovered node's next reboot (the Omni bug).
//   - POST /nodes/{address}/wipe-ephemeral: the node's EPHEMERAL is lost
//     out of band (its etcd data, no leave; it reboots with its
//     configuration): a majority of control planes wiped loses quorum,
//     all of them the cluster's etcd and its Kubernetes objects (204;
//     404 without a node there, 400 for an address outside 127.0.0.0/8).
func (l *Lab) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, l.Status()) })
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, l.rec.Calls()) })
	mux.HandleFunc("PUT /knobs", func(w http.ResponseWriter, r *http.Request) {
		k, ok := readKnobs(w, r)
		if !ok {
			return
		}
		l.inj.Set(k)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /nodes", func(w http.ResponseWriter, _ *http.Request) {
		nodes := l.fleet.Nodes()
		out := make([]talosnode.NodeStatus, len(nodes))
		for i, n := range nodes {
			out[i] = n.Status()
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("PUT /nodes/{address}/knobs", func(w http.ResponseWriter, r *http.Request) {
		addr, ok := nodeAddress(w, r)
		if !ok {
			return
		}
		var k talosnode.Knobs
		if !readJSON(w, r, "node knobs", &k) {
			return
		}
		switch now, later := l.nodeKnobs.set(addr, k, r.URL.Query().Get("pending") == "true"); {
		case now:
			if err := l.kube.ApplyKnobs(r.Context(), addr); err != nil {
				http.Error(w, fmt.Sprintf("knobs set; their Kubernetes side (drainBlocked): %v", err), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		case later:
			w.WriteHeader(http.StatusAccepted)
		default:
			http.Error(w, fmt.Sprintf("no Talos node at %s (?pending=true keeps the knobs for the next one)", addr), http.StatusNotFound)
		}
	})
	mux.HandleFunc("POST /nodes/{address}/wipe-ephemeral", l.wipeEphemeral)
	return mux
}

// wipeEphemeral serves POST /nodes/{address}/wipe-ephemeral.
func (l *Lab) wipeEphemeral(w http.ResponseWriter, r *http.Request) {
	addr, ok := nodeAddress(w, r)
	if !ok {
		return
	}
	n, found := l.fleet.Node(addr)
	if !found {
		http.Error(w, fmt.Sprintf("no Talos node at %s", addr), http.StatusNotFound)
		return
	}
	n.WipeEphemeral()
	w.WriteHeader(http.StatusNoContent)
}

// nodeAddress is the loopback address of the request's path; false: it
// answered 400.
func nodeAddress(w http.ResponseWriter, r *http.Request) (netip.Addr, bool) {
	addr, err := netip.ParseAddr(r.PathValue("address"))
	if err == nil {
		err = labnet.CheckLoopback(addr.String())
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("node address: %v", err), http.StatusBadRequest)
		return netip.Addr{}, false
	}
	return addr, true
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// readJSON decodes the request body into v, answering 400 when it cannot.
func readJSON(w http.ResponseWriter, r *http.Request, what string, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(v); err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", what, err), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// ValidateKnobs refuses fault knobs that mean nothing: a rate outside 0..1,
// rates of exclusive faults (hang, error, lost, late) adding up to more
// than 1, a negative duration, slow answers without a delay, a scripted
// fault both late and after.
func ValidateKnobs(k labnet.Knobs) error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"errorRate", k.ErrorRate}, {"hangRate", k.HangRate}, {"lostRate", k.LostRate}, {"lateRate", k.LateRate}, {"slowRate", k.SlowRate}} {
		if r.v < 0 || r.v > 1 {
			return fmt.Errorf("%s %v: must be between 0 and 1", r.name, r.v)
		}
	}
	if sum := k.HangRate + k.ErrorRate + k.LostRate + k.LateRate; sum > 1 {
		return fmt.Errorf("hangRate + errorRate + lostRate + lateRate = %v: a request gets one of these faults at most, so they add up to 1 at most", sum)
	}
	if k.Latency < 0 || k.Slow < 0 || k.LateBy < 0 {
		return fmt.Errorf("latency %v, slow %v, lateBy %v: durations cannot be negative", k.Latency, k.Slow, k.LateBy)
	}
	if k.SlowRate > 0 && k.Slow == 0 {
		return fmt.Errorf("slowRate %v without slow: say how late a slow answer comes (e.g. \"slow\": \"25s\")", k.SlowRate)
	}
	for i, f := range k.Faults {
		if f.Late && f.After {
			return fmt.Errorf("faults[%d] (%s %s %s): late and after exclude each other: after applies the request before its answer is lost, late after; keep one", i, f.Service, f.Method, f.PathPrefix)
		}
	}
	return nil
}

// knobsWire is labnet.Knobs as PUT /knobs reads it: latency, slow and
// lateBy are Go durations ("25s") or nanoseconds.
type knobsWire struct {
	labnet.Knobs
	Latency any `json:"latency,omitempty"`
	Slow    any `json:"slow,omitempty"`
	LateBy  any `json:"lateBy,omitempty"`
}

// readKnobs reads and validates the knobs of a PUT /knobs; false: it
// answered 400.
func readKnobs(w http.ResponseWriter, r *http.Request) (labnet.Knobs, bool) {
	var wire knobsWire
	if !readJSON(w, r, "knobs", &wire) {
		return labnet.Knobs{}, false
	}
	k := wire.Knobs
	var err error
	if k.Latency, err = duration("latency", wire.Latency); err == nil {
		k.Slow, err = duration("slow", wire.Slow)
	}
	if err == nil {
		k.LateBy, err = duration("lateBy", wire.LateBy)
	}
	if err == nil {
		err = ValidateKnobs(k)
	}
	if err != nil {
		http.Error(w, "knobs: "+err.Error(), http.StatusBadRequest)
		return labnet.Knobs{}, false
	}
	return k, true
}

// duration reads a JSON duration: a string time.ParseDuration takes, or a
// number of nanoseconds.
func duration(name string, v any) (time.Duration, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case float64:
		return time.Duration(x), nil
	case string:
		d, err := time.ParseDuration(x)
		if err != nil {
			return 0, fmt.Errorf("%s %q: want a duration like \"25s\"", name, x)
		}
		return d, nil
	}
	return 0, fmt.Errorf("%s %s: want a duration like \"25s\" or nanoseconds", name, mustJSON(v))
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// nodeKnobs sets the scripted faults of the Talos nodes, including nodes
// that have not booted yet: their knobs wait here for the boot.
type nodeKnobs struct {
	fleet *talosnode.Fleet

	// mu orders a boot and a set for the same address, so knobs set while
	// the node boots are not lost.
	mu      sync.Mutex
	pending map[netip.Addr]talosnode.Knobs
}

// set gives the node at addr its knobs (now); without a node there and
// with pending, it keeps them for the next node that boots at addr (later).
func (nk *nodeKnobs) set(addr netip.Addr, k talosnode.Knobs, pending bool) (now, later bool) {
	nk.mu.Lock()
	defer nk.mu.Unlock()
	if n, ok := nk.fleet.Node(addr); ok {
		n.SetKnobs(k)
		return true, false
	}
	if pending {
		nk.pending[addr] = k
	}
	return false, pending
}

// boot boots a node at addr from config with the knobs waiting for it;
// opts say how the cloud starts it (talosnode.DiskImage).
func (nk *nodeKnobs) boot(addr netip.Addr, config []byte, opts ...talosnode.VMOption) error {
	nk.mu.Lock()
	defer nk.mu.Unlock()
	if _, err := nk.fleet.Boot(addr, config, nk.pending[addr], opts...); err != nil {
		return err
	}
	delete(nk.pending, addr)
	return nil
}
