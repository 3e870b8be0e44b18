package talosapi

import (
	"errors"
	"io"
	"strings"
	"testing"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
)

// An etcd member list answer with no message is no list at all: an
// error, never an empty list (which would read as "no node is a member").
func TestMembersOfAnAnswerWithoutAMessage(t *testing.T) {
	t.Parallel()
	if m, err := membersOf(&machineapi.EtcdMemberListResponse{}); err == nil {
		t.Errorf("no message: %+v, want an error", m)
	}
	resp := &machineapi.EtcdMemberListResponse{Messages: []*machineapi.EtcdMembers{{Members: []*machineapi.EtcdMember{{Id: 7, Hostname: "cp-01", PeerUrls: []string{"https://127.0.0.1:2380"}}}}}}
	if m, err := membersOf(resp); err != nil || len(m) != 1 || m[0].ID != 7 || m[0].Hostname != "cp-01" {
		t.Errorf("one member: %+v, %v", m, err)
	}
}

// An entry of /var/lib the node could not read may be etcd's data: the
// directory is not known to be empty (a node read "empty" would count as
// never bootstrapped, and bootstrap a second etcd).
func TestEntriesUnderAnUnreadableEntry(t *testing.T) {
	t.Parallel()
	listing := func(entries ...*machineapi.FileInfo) func() (*machineapi.FileInfo, error) {
		return func() (*machineapi.FileInfo, error) {
			if len(entries) == 0 {
				return nil, io.EOF
			}
			fi := entries[0]
			entries = entries[1:]
			return fi, nil
		}
	}
	unreadable := &machineapi.FileInfo{Name: "/var/lib/etcd", RelativeName: "etcd", Error: "permission denied"}
	if found, err := entriesUnder(listing(&machineapi.FileInfo{RelativeName: "kubelet"}, unreadable), "etcd"); err == nil || !strings.Contains(err.Error(), "/var/lib/etcd: permission denied") {
		t.Errorf("unreadable entry: found %t, err %v; want an error", found, err)
	}
	if found, err := entriesUnder(listing(&machineapi.FileInfo{RelativeName: "etcd"}, &machineapi.FileInfo{RelativeName: "etcd/member"}), "etcd"); err != nil || !found {
		t.Errorf("data: found %t, err %v", found, err)
	}
	if found, err := entriesUnder(listing(&machineapi.FileInfo{RelativeName: "etcd"}), "etcd"); err != nil || found {
		t.Errorf("empty: found %t, err %v", found, err)
	}
	broken := func() (*machineapi.FileInfo, error) { return nil, errors.New("stream broke") }
	if _, err := entriesUnder(broken, "etcd"); err == nil {
		t.Error("a broken stream read as empty")
	}
}
