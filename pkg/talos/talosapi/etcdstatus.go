package talosapi

import (
	"context"
	"errors"
	"regexp"
	"slices"
)

// EtcdStatus is one control plane's etcd member as etcd's own Status
// reports it (what `talosctl etcd status` shows).
type EtcdStatus struct {
	// MemberID is the answering member's id.
	MemberID uint64
	// Leader is the leader's member id as this member knows it; 0 when it
	// knows of none (no quorum).
	Leader uint64
	// Learner reports a member that is not voting yet.
	Learner bool
	// DBSize is the backend database's size on disk, in bytes (what
	// etcd's quota-backend-bytes limits); DBSizeInUse the part of it in
	// use (the rest is freed space a defragmentation gives back).
	DBSize, DBSizeInUse int64
	// Version is the etcd server's version.
	Version string
	// Errors are etcd's status errors as it words them, its active alarms
	// among them ("memberID:… alarm:NOSPACE").
	Errors []string
	// Alarms are the active alarms' names (NOSPACE, CORRUPT), from Errors.
	Alarms []string
}

// EtcdStatus asks node's etcd member for its status (EtcdStatus, an
// os:etcd:backup call like the snapshot). A node whose etcd does not run
// fails: its status is unknown, never assumed healthy.
func (c *Client) EtcdStatus(ctx context.Context, node string) (EtcdStatus, error) {
	var out EtcdStatus
	err := c.read(ctx, "EtcdStatus", node, func(ctx context.Context) error {
		resp, err := c.c.EtcdStatus(ctx)
		if err != nil {
			return err
		}
		msgs := resp.GetMessages()
		if len(msgs) == 0 || msgs[0].GetMemberStatus() == nil {
			return errors.New("empty answer")
		}
		st := msgs[0].GetMemberStatus()
		out = EtcdStatus{
			MemberID: st.GetMemberId(), Leader: st.GetLeader(), Learner: st.GetIsLearner(),
			DBSize: st.GetDbSize(), DBSizeInUse: st.GetDbSizeInUse(), Version: st.GetProtocolVersion(),
			Errors: st.GetErrors(), Alarms: alarms(st.GetErrors()),
		}
		return nil
	})
	return out, err
}

// alarmWord is how etcd words an active alarm among a status's errors
// (AlarmMember's text form: "memberID:10276657743932975437 alarm:NOSPACE").
var alarmWord = regexp.MustCompile(`\balarm:\s*([A-Z_]+)`)

// alarms are the names of the active alarms among etcd's status errors,
// sorted and each once; NONE (no alarm) is none.
func alarms(errs []string) []string {
	var out []string
	for _, e := range errs {
		for _, m := range alarmWord.FindAllStringSubmatch(e, -1) {
			if m[1] != "NONE" && !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	slices.Sort(out)
	return out
}
