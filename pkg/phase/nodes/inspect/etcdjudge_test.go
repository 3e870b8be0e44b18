package inspect

import (
	"errors"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

const (
	hcp1 = "c-controlplane-01"
	hcp2 = "c-controlplane-02"
	hcp3 = "c-controlplane-03"
)

// healthy is a desired control plane's read whose etcd is fine.
func healthy(host, addr string, size int64) etcdRead {
	return etcdRead{host: host, addr: addr, quota: defaultEtcdQuota, status: talosapi.EtcdStatus{DBSize: size, DBSizeInUse: size / 2, Version: "3.6.5"}}
}

func threeMembers() []talosapi.Member {
	return []talosapi.Member{{ID: 1, Hostname: hcp1}, {ID: 2, Hostname: hcp2}, {ID: 3, Hostname: hcp3}}
}

func threeReads() []etcdRead {
	return []etcdRead{healthy(hcp1, "10.0.0.1", 20<<20), healthy(hcp2, "10.0.0.2", 20<<20), healthy(hcp3, "10.0.0.3", 20<<20)}
}

// TestJudgeEtcd: the findings from the member list and each control
// plane's status: each problem needs attention by name, with a fix; a
// healthy etcd needs none.
func TestJudgeEtcd(t *testing.T) {
	t.Parallel()
	with := func(f func([]etcdRead)) []etcdRead { r := threeReads(); f(r); return r }
	tests := []struct {
		name       string
		members    []talosapi.Member
		reads      []etcdRead
		attention  map[string]string // item → a word of its attention
		fix        map[string]string // item → a word of its fix
		incomplete string
	}{
		{name: "healthy", members: threeMembers(), reads: threeReads()},
		{
			name:      "a member no control plane explains",
			members:   append(threeMembers(), talosapi.Member{ID: 0xab, Hostname: "c-controlplane-04", PeerURLs: []string{"https://10.0.0.4:2380"}}),
			reads:     threeReads(),
			attention: map[string]string{"etcd member c-controlplane-04": "no desired control plane explains"},
			fix:       map[string]string{"etcd member c-controlplane-04": "talosctl -n 10.0.0.1 etcd remove-member 00000000000000ab"},
		},
		{
			name:      "an unnamed member",
			members:   append(threeMembers(), talosapi.Member{ID: 0xcd}),
			reads:     threeReads(),
			attention: map[string]string{"etcd member unnamed member 00000000000000cd": "never started"},
		},
		{
			name:      "a learner",
			members:   []talosapi.Member{{ID: 1, Hostname: hcp1}, {ID: 2, Hostname: hcp2, Learner: true}, {ID: 3, Hostname: hcp3}},
			reads:     threeReads(),
			attention: map[string]string{"etcd learner " + hcp2: "still a learner"},
			fix:       map[string]string{"etcd learner " + hcp2: "talosctl -n 10.0.0.2 logs etcd"},
		},
		{
			name:      "NOSPACE and CORRUPT",
			members:   threeMembers(),
			reads:     with(func(r []etcdRead) { r[0].status.Alarms = []string{"CORRUPT", "NOSPACE"} }),
			attention: map[string]string{"etcd on " + hcp1: "alarm CORRUPT, alarm NOSPACE"},
			fix:       map[string]string{"etcd on " + hcp1: "talosctl -n 10.0.0.1 etcd alarm disarm"},
		},
		{
			name:      "above 80 % of the default quota",
			members:   threeMembers(),
			reads:     with(func(r []etcdRead) { r[2].status.DBSize = 1800 << 20 }),
			attention: map[string]string{"etcd on " + hcp3: "database at 88 % of its quota"},
			fix:       map[string]string{"etcd on " + hcp3: "talosctl -n 10.0.0.3 etcd defrag"},
		},
		{
			name:    "below 80 % of a raised quota",
			members: threeMembers(),
			reads:   with(func(r []etcdRead) { r[2].status.DBSize, r[2].quota = 1800<<20, 8<<30 }),
		},
		{
			name:       "a control plane that does not answer",
			members:    threeMembers(),
			reads:      with(func(r []etcdRead) { r[1].err = errors.New("did not answer EtcdStatus: connection refused") }),
			incomplete: "etcd on " + hcp2 + ": did not answer EtcdStatus: connection refused; its health is unknown",
		},
		{
			name:       "a quota that is unknown",
			members:    threeMembers(),
			reads:      with(func(r []etcdRead) { r[0].quota, r[0].quotaErr = 0, errors.New("no machine configuration") }),
			incomplete: "etcd on " + hcp1 + ": no machine configuration; its database is not weighed against it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := judgeEtcd(tt.members, tt.reads)
			items := map[string]phase.Finding{}
			for _, it := range j.items {
				items[it.Name] = it
				if want, ok := tt.attention[it.Name]; !ok && it.Attention != "" || ok && !strings.Contains(it.Attention, want) {
					t.Errorf("%s: attention %q, want %q", it.Name, it.Attention, want)
				}
				if it.Attention != "" && it.Fix == "" {
					t.Errorf("%s needs attention but says no fix", it.Name)
				}
				if want, ok := tt.fix[it.Name]; ok && !strings.Contains(it.Fix, want) {
					t.Errorf("%s: fix %q, want %q in it", it.Name, it.Fix, want)
				}
			}
			for name := range tt.attention {
				if _, ok := items[name]; !ok {
					t.Errorf("no line %q among %v", name, j.items)
				}
			}
			if got := strings.Join(j.incomplete, "; "); got != tt.incomplete {
				t.Errorf("incomplete %q, want %q", got, tt.incomplete)
			}
			if len(j.check.Members) != len(tt.members) || len(j.check.Nodes) != len(tt.reads) || !j.check.Done {
				t.Errorf("report %+v", j.check)
			}
		})
	}
}

// TestUnansweredNodeIsNotHealthy is the guard: a control plane whose
// etcd did not answer makes the check incomplete and not ok, is reported
// unanswered with no sizes and no "no alarm", never counted healthy.
func TestUnansweredNodeIsNotHealthy(t *testing.T) {
	t.Parallel()
	reads := threeReads()
	reads[2] = etcdRead{host: hcp3, addr: "10.0.0.3", err: errors.New("did not answer EtcdStatus: deadline exceeded")}
	var rep checkReport
	j := judgeEtcd(threeMembers(), reads)
	rep.Etcd = &j.check
	rep.Items, rep.Incomplete = j.items, j.incomplete
	got := rep.finish()
	if got.OK {
		t.Error("a check with an unanswered control plane is ok")
	}
	n := got.Etcd.Nodes[2]
	if n.Answered || n.Error == "" || n.DBSizeBytes != 0 || n.Alarms != nil {
		t.Errorf("the unanswered node is reported %+v", n)
	}
	if len(got.Incomplete) != 1 || !strings.Contains(got.Incomplete[0], hcp3) {
		t.Errorf("incomplete %q, want the unanswered node named", got.Incomplete)
	}
}

// TestEtcdQuota: quota-backend-bytes from the machine configuration,
// else etcd's default.
func TestEtcdQuota(t *testing.T) {
	t.Parallel()
	base := "version: v1alpha1\nmachine:\n  type: controlplane\n  token: abc\ncluster:\n  controlPlane:\n    endpoint: https://10.0.0.1:6443\n"
	tests := []struct {
		name, extra string
		want        int64
		err         bool
	}{
		{"default", "", defaultEtcdQuota, false},
		{"set", "  etcd:\n    extraArgs:\n      quota-backend-bytes: \"8589934592\"\n", 8 << 30, false},
		{"not a number", "  etcd:\n    extraArgs:\n      quota-backend-bytes: 8G\n", 0, true},
	}
	for _, tt := range tests {
		q, err := etcdQuota([]byte(base + tt.extra))
		if q != tt.want || (err != nil) != tt.err {
			t.Errorf("%s: quota %d, %v; want %d, error %v", tt.name, q, err, tt.want, tt.err)
		}
	}
	if _, err := etcdQuota([]byte("not: [a config")); err == nil {
		t.Error("a configuration that does not load has a quota")
	}
}
