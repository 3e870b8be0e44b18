package report

// EtcdCheck is etcd's hygiene as check found it through talosconfig's
// endpoint: the member list, and each desired control plane's member
// status. Done false means the member list was not read (Reason says
// why): that is never "fine".
type EtcdCheck struct {
	Done   bool   `json:"done"`
	Reason string `json:"reason,omitempty"`
	// Members are the etcd members, as the endpoint's member lists them.
	Members []EtcdMember `json:"members"`
	// Nodes are the desired control planes, each asked for its member's
	// status.
	Nodes []EtcdNode `json:"nodes,omitempty"`
}

// EtcdMember is one etcd member.
type EtcdMember struct {
	// ID is etcd's member id, in hex as talosctl prints it.
	ID string `json:"id"`
	// Hostname is the member's name; empty for one added but never
	// started.
	Hostname string `json:"hostname"`
	// Learner is true for a member that is not voting yet.
	Learner bool `json:"learner"`
	// Desired is true when a desired control plane explains the member.
	Desired bool `json:"desired"`
}

// EtcdNode is one desired control plane's etcd member status.
type EtcdNode struct {
	Node string `json:"node"`
	// Answered is false when the node did not answer EtcdStatus (Error
	// says why) or is no etcd member: nothing is known of it then, and
	// it is never counted healthy.
	Answered bool   `json:"answered"`
	Error    string `json:"error,omitempty"`
	// DBSizeBytes is the database's size on disk, DBSizeInUseBytes the
	// part of it in use.
	DBSizeBytes      int64 `json:"dbSizeBytes,omitempty"`
	DBSizeInUseBytes int64 `json:"dbSizeInUseBytes,omitempty"`
	// QuotaBytes is the database's quota (the machine configuration's
	// quota-backend-bytes, else etcd's default); 0 when it is unknown.
	QuotaBytes int64 `json:"quotaBytes,omitempty"`
	// Alarms are the member's active alarms (NOSPACE, CORRUPT).
	Alarms []string `json:"alarms,omitempty"`
}

// QuotaRatio is the database's size against its quota; ok false when
// either is unknown.
func (n EtcdNode) QuotaRatio() (float64, bool) {
	if !n.Answered || n.QuotaBytes <= 0 {
		return 0, false
	}
	return float64(n.DBSizeBytes) / float64(n.QuotaBytes), true
}

// etcdFamilies are etcd's metrics; absent when etcd was not looked at,
// a node's sizes and alarms absent when it did not answer.
func etcdFamilies(e *EtcdCheck) []*family {
	members := &family{name: "etcd_members", help: "How many etcd members the member list holds; absent when it was not read."}
	unexplained := &family{name: "etcd_unexplained_members", help: "How many etcd members no desired control plane explains; absent when the member list was not read."}
	learners := &family{name: "etcd_learners", help: "How many etcd members are learners (not yet voting); absent when the member list was not read."}
	answered := &family{name: "etcd_status_answered", help: "1 when the control plane answered EtcdStatus, else 0 (nothing is known of its etcd then)."}
	alarms := &family{name: "etcd_alarms", help: "How many alarms the control plane's etcd member has active; absent when it did not answer."}
	alarm := &family{name: "etcd_alarm", help: "1 for each active alarm (NOSPACE, CORRUPT) of the control plane's etcd member."}
	size := &family{name: "etcd_db_size_bytes", help: "The control plane's etcd database size on disk, in bytes; absent when it did not answer."}
	quota := &family{name: "etcd_db_quota_bytes", help: "The control plane's etcd database quota (quota-backend-bytes), in bytes; absent when unknown."}
	ratio := &family{name: "etcd_db_quota_ratio", help: "The control plane's etcd database size against its quota (0 to 1); absent when either is unknown."}
	fams := []*family{members, unexplained, learners, answered, alarms, alarm, size, quota, ratio}
	if e == nil || !e.Done {
		return fams
	}
	var n, l int
	for _, m := range e.Members {
		if !m.Desired {
			n++
		}
		if m.Learner {
			l++
		}
	}
	members.add(float64(len(e.Members)))
	unexplained.add(float64(n))
	learners.add(float64(l))
	for _, nd := range e.Nodes {
		answered.add(bit(nd.Answered), "node", nd.Node)
		if !nd.Answered {
			continue
		}
		alarms.add(float64(len(nd.Alarms)), "node", nd.Node)
		for _, a := range nd.Alarms {
			alarm.add(1, "node", nd.Node, "alarm", a)
		}
		size.add(float64(nd.DBSizeBytes), "node", nd.Node)
		if r, ok := nd.QuotaRatio(); ok {
			quota.add(float64(nd.QuotaBytes), "node", nd.Node)
			ratio.add(r, "node", nd.Node)
		}
	}
	return fams
}
