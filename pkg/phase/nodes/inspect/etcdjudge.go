package inspect

import (
	"fmt"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// Sizes in etcd's quota arithmetic: etcd's default quota-backend-bytes
// (2 GiB, which Talos keeps), and the share of it above which check
// warns.
const (
	defaultEtcdQuota = 2 << 30
	etcdQuotaWarn    = 0.8
)

// etcdRead is one desired control plane's etcd as check read it: its
// member's status (err when it did not answer, or is no member at all)
// and its database quota (0 when unknown, quotaErr saying why).
type etcdRead struct {
	host, addr string
	status     talosapi.EtcdStatus
	err        error
	quota      int64
	quotaErr   error
}

// etcdJudgement is what check says of etcd: the report, its lines, and
// why it is incomplete.
type etcdJudgement struct {
	check      report.EtcdCheck
	items      []phase.Finding
	incomplete []string
}

// judgeEtcd judges the member list (members) against the desired control
// planes, each read in reads: a member no desired control plane explains,
// a learner, an alarm, a database above 80 % of its quota each need
// attention; a control plane that did not answer makes the check
// incomplete, as nothing is known of its etcd, never "healthy".
func judgeEtcd(members []talosapi.Member, reads []etcdRead) etcdJudgement {
	j := etcdJudgement{check: report.EtcdCheck{Done: true, Members: []report.EtcdMember{}}}
	desired := func(host string) bool {
		return host != "" && slices.ContainsFunc(reads, func(r etcdRead) bool { return r.host == host })
	}
	var names []string
	for _, m := range members {
		rm := report.EtcdMember{ID: fmt.Sprintf("%016x", m.ID), Hostname: m.Hostname, Learner: m.Learner, Desired: desired(m.Hostname)}
		j.check.Members = append(j.check.Members, rm)
		names = append(names, memberName(rm))
		if !rm.Desired {
			j.items = append(j.items, unexplainedMember(rm, m.PeerURLs, reads))
		}
		if m.Learner {
			j.items = append(j.items, learnerFinding(rm, reads))
		}
	}
	j.items = append([]phase.Finding{{
		Name:       "etcd members",
		Configured: fmt.Sprintf("%d control planes", len(reads)),
		Observed:   fmt.Sprintf("%d members: %s", len(members), strings.Join(names, ", ")),
	}}, j.items...)
	for _, r := range reads {
		n, item := nodeEtcd(r)
		j.check.Nodes = append(j.check.Nodes, n)
		j.items = append(j.items, item)
		switch {
		case !n.Answered:
			j.incomplete = append(j.incomplete, fmt.Sprintf("etcd on %s: %s; its health is unknown", r.host, n.Error))
		case r.quotaErr != nil:
			j.incomplete = append(j.incomplete, fmt.Sprintf("etcd on %s: %v; its database is not weighed against it", r.host, r.quotaErr))
		}
	}
	return j
}

// memberName is how a member is named in a line: its hostname, else its
// id.
func memberName(m report.EtcdMember) string {
	if m.Hostname == "" {
		return "unnamed member " + m.ID
	}
	return m.Hostname
}

// anyAddr is the address of a desired control plane that answered, for
// a fix to run through; "<control plane>" when none did.
func anyAddr(reads []etcdRead) string {
	for _, r := range reads {
		if r.err == nil && r.addr != "" {
			return r.addr
		}
	}
	return "<control plane>"
}

// unexplainedMember is the line for a member no desired control plane
// explains.
func unexplainedMember(m report.EtcdMember, peers []string, reads []etcdRead) phase.Finding {
	f := phase.Finding{
		Name:      "etcd member " + memberName(m),
		Observed:  fmt.Sprintf("id %s, peer URLs %s", m.ID, strings.Join(peers, " ")),
		Attention: "an etcd member no desired control plane explains (a removed control plane that never left etcd, or another machine)",
		Fix: fmt.Sprintf("kubectl talosc converge removes it once its machine is gone (on the member list of a surviving control plane); by hand: talosctl -n %s etcd remove-member %s",
			anyAddr(reads), m.ID),
	}
	if m.Hostname == "" {
		f.Attention = "an etcd member added but never started, which no desired control plane explains"
		f.Fix = fmt.Sprintf("if no control plane is joining now, remove it: talosctl -n %s etcd remove-member %s", anyAddr(reads), m.ID)
	}
	return f
}

// learnerFinding is the line for a member that is still a learner: Talos
// promotes a learner within minutes, once it caught up.
func learnerFinding(m report.EtcdMember, reads []etcdRead) phase.Finding {
	addr := anyAddr(reads)
	if i := slices.IndexFunc(reads, func(r etcdRead) bool { return r.host == m.Hostname && r.addr != "" }); i >= 0 {
		addr = reads[i].addr
	}
	return phase.Finding{
		Name:      "etcd learner " + memberName(m),
		Observed:  "id " + m.ID + ", not voting",
		Attention: "still a learner: Talos promotes a learner within minutes once it has caught up",
		Fix: fmt.Sprintf("look at its etcd (talosctl -n %s service etcd; talosctl -n %s logs etcd); if it never catches up, reset it (talosctl -n %s reset --system-labels-to-wipe EPHEMERAL) so that it joins again",
			addr, addr, addr),
	}
}

// nodeEtcd judges one desired control plane's member status.
func nodeEtcd(r etcdRead) (report.EtcdNode, phase.Finding) {
	f := phase.Finding{Name: "etcd on " + r.host}
	if r.err != nil {
		n := report.EtcdNode{Node: r.host, Error: r.err.Error()}
		f.Observed = "unknown: " + n.Error
		f.Fix = "is its etcd running? talosctl -n " + orUnknown(r.addr) + " service etcd"
		return n, f
	}
	st := r.status
	n := report.EtcdNode{
		Node: r.host, Answered: true, DBSizeBytes: st.DBSize, DBSizeInUseBytes: st.DBSizeInUse,
		QuotaBytes: r.quota, Alarms: st.Alarms,
	}
	f.Configured = "quota " + quotaWord(r.quota)
	f.Observed = fmt.Sprintf("database %s (%s in use), etcd %s", bytesWord(st.DBSize), bytesWord(st.DBSizeInUse), st.Version)
	var need, fix []string
	for _, a := range st.Alarms {
		need = append(need, "alarm "+a)
		fix = append(fix, alarmFix(a, r))
	}
	if ratio, ok := n.QuotaRatio(); ok && ratio > etcdQuotaWarn {
		need = append(need, fmt.Sprintf("database at %.0f %% of its quota", 100*ratio))
		fix = append(fix, "talosctl -n "+r.addr+" etcd defrag (gives back the space compaction freed); if it stays high, raise quota-backend-bytes in cluster.etcd.extraArgs (a config patch)")
	}
	f.Attention, f.Fix = strings.Join(need, ", "), strings.Join(fix, "; ")
	return n, f
}

// alarmFix is what clears an etcd alarm.
func alarmFix(alarm string, r etcdRead) string {
	switch alarm {
	case "NOSPACE":
		return fmt.Sprintf("free space, then disarm: talosctl -n %s etcd defrag; talosctl -n %s etcd alarm disarm (raise quota-backend-bytes in cluster.etcd.extraArgs if the data needs more)", r.addr, r.addr)
	case "CORRUPT":
		return fmt.Sprintf("the member's data is corrupt: replace %s (kubectl talosc converge --replace %s) or restore the newest backup (kubectl talosc restore)", r.host, r.host)
	}
	return fmt.Sprintf("talosctl -n %s etcd alarm list, then the etcd documentation for %s", r.addr, alarm)
}

func orUnknown(addr string) string {
	if addr == "" {
		return "<its address>"
	}
	return addr
}

func quotaWord(q int64) string {
	if q <= 0 {
		return "unknown"
	}
	return bytesWord(q)
}

// bytesWord is a size in MiB, or GiB from 1 GiB.
func bytesWord(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
