package inspect

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase/live"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/report/reporttest"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// etcdTalos answers the etcd reads of check: its member list through the
// endpoint, each node's status by address (absent: it does not answer).
type etcdTalos struct {
	live.Talos
	members  []talosapi.Member
	statuses map[string]talosapi.EtcdStatus
	asked    []string
}

func (f *etcdTalos) EtcdMembers(_ context.Context, node string) ([]talosapi.Member, error) {
	f.asked = append(f.asked, "members "+node)
	return f.members, nil
}

func (f *etcdTalos) EtcdStatus(_ context.Context, node string) (talosapi.EtcdStatus, error) {
	st, ok := f.statuses[node]
	if !ok {
		return talosapi.EtcdStatus{}, errors.New("connection refused")
	}
	return st, nil
}

func (f *etcdTalos) MachineConfig(context.Context, string) ([]byte, error) {
	return []byte("version: v1alpha1\nmachine: {type: controlplane, token: abc}\ncluster:\n  controlPlane: {endpoint: https://10.0.0.1:6443}\n  etcd:\n    extraArgs: {quota-backend-bytes: \"1073741824\"}\n"), nil
}

func (f *etcdTalos) Close() error { return nil }

func dialing(t live.Talos, endpoints *[]string) live.TalosDialer {
	return func(_ context.Context, _ *identity.Identity, _, endpoint string) (live.Talos, error) {
		*endpoints = append(*endpoints, endpoint)
		return t, nil
	}
}

// TestCheckEtcd: check reads etcd through talosconfig's endpoint: a
// member of a control plane cluster.yaml does not desire and a control
// plane that does not answer are reported, and the textfile carries
// etcd's series, parsed with expfmt.
func TestCheckEtcd(t *testing.T) {
	t.Parallel()
	cfg, _ := clusterDir(t)
	cfg.ControlPlane = config.Pool{Name: config.RoleControlPlane, Count: 3}
	peer := func(ip string) []string { return []string{"https://" + ip + ":2380"} }
	fake := &etcdTalos{
		members: []talosapi.Member{
			{ID: 1, Hostname: "c-controlplane-01", PeerURLs: peer("10.0.0.11")},
			{ID: 2, Hostname: "c-controlplane-02", PeerURLs: peer("10.0.0.12")},
			{ID: 3, Hostname: "c-controlplane-03", PeerURLs: peer("10.0.0.13")},
			{ID: 4, Hostname: "c-controlplane-04", PeerURLs: peer("10.0.0.14")},
		},
		statuses: map[string]talosapi.EtcdStatus{
			"10.0.0.11": {DBSize: 900 << 20, Alarms: []string{"NOSPACE"}},
			"10.0.0.12": {DBSize: 100 << 20},
		},
	}
	var endpoints []string
	var rep checkReport
	rep.etcd(t.Context(), cfg, dialing(fake, &endpoints))
	got := rep.finish()
	if len(endpoints) != 1 || endpoints[0] != "10.0.0.2" || fake.asked[0] != "members 10.0.0.2" {
		t.Errorf("dialed %q, asked %q; want talosconfig's endpoint", endpoints, fake.asked)
	}
	if got.OK || len(got.Incomplete) != 1 || !strings.Contains(got.Incomplete[0], "etcd on c-controlplane-03: did not answer EtcdStatus: connection refused") {
		t.Errorf("ok %v, incomplete %q; want c-controlplane-03's silence", got.OK, got.Incomplete)
	}
	attention := map[string]string{}
	for _, it := range got.Items {
		attention[it.Name] = it.Attention
	}
	if !strings.Contains(attention["etcd member c-controlplane-04"], "no desired control plane explains") ||
		attention["etcd on c-controlplane-01"] != "alarm NOSPACE, database at 88 % of its quota" {
		t.Errorf("attention %q", attention)
	}

	var b bytes.Buffer
	if err := report.WriteMetrics(&b, &report.CheckReport{Cluster: "c", Etcd: got.Etcd}); err != nil {
		t.Fatal(err)
	}
	samples, err := reporttest.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	key := func(name string, pairs ...string) string {
		return reporttest.Key(name, append(pairs, "cluster", "c")...)
	}
	for k, v := range map[string]float64{
		key("talosc_etcd_members"):                                                4,
		key("talosc_etcd_unexplained_members"):                                    1,
		key("talosc_etcd_alarm", "node", "c-controlplane-01", "alarm", "NOSPACE"): 1,
		key("talosc_etcd_db_size_bytes", "node", "c-controlplane-01"):             900 << 20,
		key("talosc_etcd_db_quota_ratio", "node", "c-controlplane-01"):            900.0 / 1024,
		key("talosc_etcd_status_answered", "node", "c-controlplane-03"):           0,
	} {
		if g, ok := samples[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if _, ok := samples[key("talosc_etcd_db_size_bytes", "node", "c-controlplane-03")]; ok {
		t.Error("the silent node has a database size")
	}
}

// TestCheckEtcdWithoutIdentity: without talossecrets.yaml or a
// talosconfig endpoint, etcd is not looked at, and the check says so: it
// is incomplete, never fine, and etcd has no series.
func TestCheckEtcdWithoutIdentity(t *testing.T) {
	t.Parallel()
	for _, file := range []string{config.TalosSecretsFile, config.TalosconfigFile} {
		cfg, _ := clusterDir(t)
		cfg.ControlPlane = config.Pool{Name: config.RoleControlPlane, Count: 1}
		if err := os.Remove(filepath.Join(cfg.Dir, file)); err != nil {
			t.Fatal(err)
		}
		var endpoints []string
		var rep checkReport
		rep.etcd(t.Context(), cfg, dialing(&etcdTalos{}, &endpoints))
		got := rep.finish()
		if got.OK || got.Etcd == nil || got.Etcd.Done || !strings.Contains(got.Etcd.Reason, file) || len(got.Incomplete) != 1 || len(endpoints) != 0 {
			t.Errorf("without %s: ok %v, etcd %+v, incomplete %q, dialed %q", file, got.OK, got.Etcd, got.Incomplete, endpoints)
		}
	}
}
