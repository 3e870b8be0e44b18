package inspect

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// How each certificate is renewed, as talosc does it. Converge writes a
// talosconfig with a new admin certificate only when there is none or its
// endpoint moved (addresses.go), and fetches a kubeconfig from the first
// control plane only when there is none (discover.go: Talos issues a new
// admin certificate for every request); the cluster CAs live in
// talossecrets.yaml, which talosc never regenerates.
const (
	renewTalosconfig = "move talosconfig aside and run kubectl talosc converge: it writes a new talosconfig with a new admin certificate (converge keeps an existing one whose endpoint is right, so it never renews it by itself)"
	renewKubeconfig  = "move kubeconfig aside and run kubectl talosc converge: it recovers a new admin kubeconfig, with a new client certificate, from the first control plane (converge keeps an existing one, so it never renews it by itself)"
	renewCA          = "talosc cannot renew a cluster CA: talossecrets.yaml is never regenerated and talosc has no CA rotation; plan the rotation well before the CA expires"
)

// certificates reports the expiry of the client certificates of the
// talosconfig and kubeconfig next to cluster.yaml and of the cluster CAs
// in talossecrets.yaml. A certificate that cannot be read makes the check
// incomplete: its expiry is unknown, never fine.
func (rep *checkReport) certificates(cfg *config.Cluster, now time.Time, warn time.Duration) {
	for _, c := range []struct {
		name, renew string
		read        func(string) ([]byte, error)
	}{
		{config.TalosconfigFile, renewTalosconfig, identity.TalosconfigCertificate},
		{config.KubeconfigFile, renewKubeconfig, identity.KubeconfigCertificate},
	} {
		path, ok := phase.ClientFile(cfg, c.name)
		if !ok {
			rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("no %s yet (has converge run?); its certificate's expiry is unknown", c.name))
			continue
		}
		pem, err := c.read(path)
		rep.certificate(report.Certificate{Name: c.name, File: c.name, Renew: c.renew}, pem, err, now, warn)
	}
	id, err := identity.Load(filepath.Join(cfg.Dir, config.TalosSecretsFile))
	if err != nil {
		rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("the cluster CAs' expiry is unknown: %v", err))
		return
	}
	for _, ca := range id.CACertificates() {
		rep.certificate(report.Certificate{Name: ca.Name, File: config.TalosSecretsFile, Renew: renewCA}, ca.PEM, nil, now, warn)
	}
}

// certificate records one certificate's expiry, or why it is unknown.
func (rep *checkReport) certificate(c report.Certificate, pem []byte, err error, now time.Time, warn time.Duration) {
	if err == nil {
		c, err = report.Expiry(c, pem, now, warn)
	}
	if err != nil {
		rep.Incomplete = append(rep.Incomplete, fmt.Sprintf("certificate %s (%s): expiry unknown: %v", c.Name, c.File, err))
		return
	}
	rep.Certificates = append(rep.Certificates, c)
	item := phase.Finding{Name: "certificate " + c.Name, Observed: fmt.Sprintf("expires %s (%d days left)", c.NotAfter.Format(time.RFC3339), c.DaysLeft)}
	if c.Attention != "" {
		item.Attention, item.Fix = c.Attention, c.Renew
	}
	rep.Items = append(rep.Items, item)
}
