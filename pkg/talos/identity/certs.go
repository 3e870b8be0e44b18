package identity

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"

	"github.com/siderolabs/crypto/x509"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"gopkg.in/yaml.v3"
)

// Names of the certificates check reports.
const (
	CertTalosconfig  = "talosconfig"
	CertKubeconfig   = "kubeconfig"
	CertTalosCA      = "talos-ca"
	CertKubernetesCA = "kubernetes-ca"
	CertEtcdCA       = "etcd-ca"
	CertAggregatorCA = "aggregator-ca"
)

// NamedCertificate is a certificate's public PEM and which one it is. PEM
// is nil when the bundle lacks it.
type NamedCertificate struct {
	Name string
	PEM  []byte
}

// CACertificates returns the public certificates of the cluster CAs: the
// Talos API (OS) CA, the Kubernetes CA, the etcd CA and the Kubernetes
// aggregator CA, in that order. Keys are never returned.
func (id *Identity) CACertificates() []NamedCertificate {
	if !id.valid() {
		return nil
	}

	c := id.bundle.Certs

	return []NamedCertificate{
		{CertTalosCA, crt(c.OS)},
		{CertKubernetesCA, crt(c.K8s)},
		{CertEtcdCA, crt(c.Etcd)},
		{CertAggregatorCA, crt(c.K8sAggregator)},
	}
}

func crt(p *x509.PEMEncodedCertificateAndKey) []byte {
	if p == nil {
		return nil
	}

	return p.Crt
}

// TalosconfigCertificate returns the PEM client certificate of the
// talosconfig's current context.
func TalosconfigCertificate(path string) ([]byte, error) {
	cfg, err := clientconfig.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read talosconfig: %w", err)
	}

	ctx, ok := cfg.Contexts[cfg.Context]
	if !ok || ctx.Crt == "" {
		return nil, fmt.Errorf("talosconfig %s: its current context %q has no client certificate", path, cfg.Context)
	}

	return decodeCertData(ctx.Crt)
}

// kubeconfigUsers is the part of a kubeconfig that names the current
// context's client certificate.
type kubeconfigUsers struct {
	CurrentContext string `yaml:"current-context"`
	Contexts       []struct {
		Name    string `yaml:"name"`
		Context struct {
			User string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			CertData string `yaml:"client-certificate-data"`
		} `yaml:"user"`
	} `yaml:"users"`
}

// KubeconfigCertificate returns the PEM client certificate
// (client-certificate-data) of the kubeconfig's current context's user.
func KubeconfigCertificate(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}

	var doc kubeconfigUsers
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}

	user := ""
	for _, c := range doc.Contexts {
		if c.Name == doc.CurrentContext {
			user = c.Context.User
		}
	}

	for _, u := range doc.Users {
		if u.Name == user && user != "" && u.User.CertData != "" {
			return decodeCertData(u.User.CertData)
		}
	}

	return nil, fmt.Errorf("kubeconfig %s: its current context %q has no client-certificate-data", path, doc.CurrentContext)
}

func decodeCertData(s string) ([]byte, error) {
	pem, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("client certificate is not base64")
	}

	return pem, nil
}
