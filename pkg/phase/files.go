package phase

import (
	"os"
	"path/filepath"

	"github.com/talosc/talosc/pkg/config"
)

// ClientFile returns the path of a client file (talosconfig, kubeconfig) in
// the cluster directory and whether it exists and is not empty.
func ClientFile(cfg *config.Cluster, name string) (string, bool) {
	p := filepath.Join(cfg.Dir, name)
	fi, err := os.Stat(p)
	return p, err == nil && fi.Mode().IsRegular() && fi.Size() > 0
}
