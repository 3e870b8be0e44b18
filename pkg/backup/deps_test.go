package backup_test

import (
	"strings"
	"testing"
)

// TestLinksNoEtcdServerNorTalos: the front door imports pkg/backup, so
// it links neither etcd's storage and server code (pkg/backup/snapshot
// does, for tc-nodes) nor Talos machinery nor a cloud SDK.
func TestLinksNoEtcdServerNorTalos(t *testing.T) {
	t.Parallel()
	goBin := needTool(t, "go")
	deps := string(run(t, nil, goBin, "list", "-deps", "."))
	for _, banned := range []string{
		"github.com/talosc/talosc/pkg/backup/snapshot",
		"go.etcd.io/etcd/server/",
		"go.etcd.io/etcd/etcdutl/",
		"go.etcd.io/bbolt",
		"github.com/siderolabs/talos/",
		"github.com/gophercloud/", // the Swift target lives in pkg/provider/openstack
	} {
		for dep := range strings.FieldsSeq(deps) {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("pkg/backup links %s; keep it out of the front door", dep)
			}
		}
	}
}
