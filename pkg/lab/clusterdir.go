package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/talosc/talosc/pkg/lab/imagefactory"
)

// WriteClusterDir writes a ready cluster directory for the lab's cloud:
// cluster.yaml and secrets.yaml pointing at it (and clouds.yaml for
// OpenStack clients, the CA to trust for Proxmox) and returns the names of
// the files written. Existing files are replaced: the directory belongs to
// this lab.
func (l *Lab) WriteClusterDir(dir, name string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	var files []string
	var err error
	switch {
	case l.OpenStack != nil:
		files, err = l.writeOpenStackDir(dir, name)
	case l.Proxmox != nil:
		files, err = l.writeProxmoxDir(dir, name)
	default:
		return nil, errors.New("the lab runs no cloud to write a cluster directory for")
	}
	if err != nil || l.ArgoCD == nil {
		return files, err
	}
	// The management cluster's kubeconfig, and argocd.kubeconfig in
	// secrets.yaml pointing at it: a lab started with the management
	// cluster registers its clusters there (AR-1: the apply target alone
	// activates the plugin; cluster.yaml's argocd section is the user's).
	more, err := writeFiles(dir, []file{{"argocd-kubeconfig", l.ArgoCD.Kubeconfig()}})
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "secrets.yaml"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString("argocd:\n  kubeconfig: argocd-kubeconfig\n")
	return append(files, more...), errors.Join(err, f.Close())
}

// releasesYAML is the talos and kubernetes sections of a lab cluster.yaml:
// the default pins, and the lab's Image Factory and kubelet registry, so
// talosc needs no environment to use them.
func releasesYAML(f *imagefactory.Factory) string {
	return fmt.Sprintf(`talos:
  version: %s
  image_factory: {url: %s, allow_http: true} # the lab's, on loopback
kubernetes:
  version: v1.35.4
  kubelet_repository: {url: %s, allow_http: true}
`, DefaultTalosVersion, f.URL, f.KubeletRepositoryURL())
}

type file struct {
	name string
	data []byte
}

// writeFiles writes files into dir (0600: they hold credentials) and
// returns their names.
func writeFiles(dir string, files []file) ([]string, error) {
	names := make([]string, 0, len(files))
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.name, err)
		}
		names = append(names, f.name)
	}
	return names, nil
}

// loopbackYAML ends a lab cluster.yaml's network section and adds its
// security one: no DNS servers, the lab's NTP address, and firewalls that
// let all of loopback in.
const loopbackYAML = `  dns: []
  ntp: [127.0.0.123]
security:
  kubernetes:
    lab: 127.0.0.0/8
  talos:
    lab: 127.0.0.0/8
`
