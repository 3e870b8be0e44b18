package nodes

import (
	"errors"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/talos/talosapi"
)

func TestDecideEtcd(t *testing.T) {
	t.Parallel()
	waiting := talosapi.EtcdState{Service: "Preparing"}
	running := talosapi.EtcdState{Service: "Running", Data: true}
	down := errors.New("talos API on 127.0.0.1 not reachable")
	for _, tc := range []struct {
		name string
		cps  []cpEtcd
		want etcdVerdict
		why  string
	}{
		{"no control plane yet", nil, etcdNeverRan, "no control plane exists yet"},
		{"every control plane waits", []cpEtcd{{"cp1", waiting, nil}, {"cp2", waiting, nil}}, etcdNeverRan, "cp2: etcd Preparing, data directory empty"},
		{"failed waiting, no data", []cpEtcd{{"cp1", talosapi.EtcdState{Service: "Failed"}, nil}}, etcdNeverRan, "cp1: etcd Failed"},
		{"one runs", []cpEtcd{{"cp1", waiting, nil}, {"cp2", running, nil}}, etcdRan, "cp2: etcd Running, data directory not empty"},
		{"data but stopped", []cpEtcd{{"cp1", talosapi.EtcdState{Service: "Finished", Data: true}, nil}}, etcdRan, "cp1: etcd Finished"},
		{"running without data", []cpEtcd{{"cp1", talosapi.EtcdState{Service: "Running"}, nil}}, etcdRan, "data directory empty"},
		{"ran wins over unreadable", []cpEtcd{{"cp1", talosapi.EtcdState{}, down}, {"cp2", running, nil}}, etcdRan, "cp2"},
		{"one unreadable", []cpEtcd{{"cp1", waiting, nil}, {"cp2", talosapi.EtcdState{}, down}}, etcdUnknown, "cp2: talos API on 127.0.0.1 not reachable"},
		{"no etcd service", []cpEtcd{{"cp1", talosapi.EtcdState{}, nil}}, etcdUnknown, "cp1: runs no etcd service"},
		{"every control plane unreadable", []cpEtcd{{"cp1", talosapi.EtcdState{}, down}}, etcdUnknown, "cp1:"},
	} {
		got, why := decideEtcd(tc.cps)
		if got != tc.want || !strings.Contains(why, tc.why) {
			t.Errorf("%s: decideEtcd = %d (%s), want %d (…%s…)", tc.name, got, why, tc.want, tc.why)
		}
	}
}

// TestOnlyWithoutAddress: discover defers the decision to the bootstrap
// only when every unreadable control plane merely had no address yet and
// none showed that etcd ran.
func TestOnlyWithoutAddress(t *testing.T) {
	t.Parallel()
	never := talosapi.EtcdState{Service: "Preparing"}
	ran := talosapi.EtcdState{Service: "Running", Data: true}
	for _, tc := range []struct {
		name string
		cps  []cpEtcd
		want bool
	}{
		{"all without address", []cpEtcd{{host: "a", err: errNoAddress}, {host: "b", err: errNoAddress}}, true},
		{"one never ran, one without address", []cpEtcd{{host: "a", state: never}, {host: "b", err: errNoAddress}}, true},
		{"one ran", []cpEtcd{{host: "a", state: ran}, {host: "b", err: errNoAddress}}, false},
		{"one silent", []cpEtcd{{host: "a", err: errors.New("talos API not reachable")}, {host: "b", err: errNoAddress}}, false},
		{"all read", []cpEtcd{{host: "a", state: never}}, false},
	} {
		if got := onlyWithoutAddress(tc.cps); got != tc.want {
			t.Errorf("%s: onlyWithoutAddress = %t, want %t", tc.name, got, tc.want)
		}
	}
}
