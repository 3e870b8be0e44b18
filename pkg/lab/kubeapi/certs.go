package kubeapi

import (
	"crypto/rand"
	stdx509 "crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/siderolabs/crypto/x509"
)

// certValidity is how long the certificates the lab mints are valid.
const certValidity = 365 * 24 * time.Hour

// FrontProxyUser is the common name of the certificate the front door
// presents to the apiserver; the apiserver accepts the X-Remote-User and
// X-Remote-Group headers from it only (--requestheader-allowed-names).
const FrontProxyUser = "front-proxy-client"

// servingNames are the DNS names a Talos control plane's apiserver
// certificate holds (besides the cluster endpoint).
func servingNames() []string {
	return []string{
		"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local",
	}
}

// SignServingCert mints a kube-apiserver serving certificate signed by the
// cluster's Kubernetes CA for the API address vip (its SANs: vip, 127.0.0.1,
// the first service IP 10.96.0.1, the extra addresses (the machine config's
// certSANs, such as a floating IP) and the "kubernetes.default…" names, as a
// Talos control plane's).
func SignServingCert(caCertPEM, caKeyPEM []byte, vip netip.Addr, extra ...netip.Addr) (certPEM, keyPEM []byte, err error) {
	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(&x509.PEMEncodedCertificateAndKey{Crt: caCertPEM, Key: caKeyPEM})
	if err != nil {
		return nil, nil, fmt.Errorf("kubeapi: cluster CA: %w", err)
	}
	ips := []net.IP{net.IP(vip.AsSlice()), net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)}
	for _, a := range extra {
		ips = append(ips, net.IP(a.AsSlice()))
	}
	kp, err := x509.NewKeyPair(ca,
		x509.CommonName("kube-apiserver"),
		x509.IPAddresses(ips),
		x509.DNSNames(servingNames()),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature|stdx509.KeyUsageKeyEncipherment),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}),
		x509.NotBefore(time.Now().Add(-time.Minute)),
		x509.NotAfter(time.Now().Add(certValidity)),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeapi: sign serving certificate: %w", err)
	}
	return kp.CrtPEM, kp.KeyPEM, nil
}

// SignClientCert mints a client certificate for user in groups (its subject
// CN and O, which is how the apiserver reads them), signed by the cluster's
// Kubernetes CA: what Talos's Kubeconfig RPC hands out for
// "admin"/"system:masters".
func SignClientCert(caCertPEM, caKeyPEM []byte, user string, groups ...string) (certPEM, keyPEM []byte, err error) {
	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(&x509.PEMEncodedCertificateAndKey{Crt: caCertPEM, Key: caKeyPEM})
	if err != nil {
		return nil, nil, fmt.Errorf("kubeapi: cluster CA: %w", err)
	}
	kp, err := x509.NewKeyPair(ca,
		x509.CommonName(user),
		x509.Organization(groups...),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}),
		x509.NotBefore(time.Now().Add(-time.Minute)),
		x509.NotAfter(time.Now().Add(certValidity)),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeapi: sign client certificate: %w", err)
	}
	return kp.CrtPEM, kp.KeyPEM, nil
}

// NewCA mints a cluster's Kubernetes CA as a Talos secrets bundle holds
// one (an ECDSA CA of organisation "kubernetes"), for an apiserver of a
// cluster that is not the lab's.
func NewCA() (certPEM, keyPEM []byte, err error) {
	ca, err := x509.NewSelfSignedCertificateAuthority(
		x509.ECDSA(true),
		x509.Organization("kubernetes"),
		x509.NotAfter(time.Now().Add(certValidity)),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeapi: Kubernetes CA: %w", err)
	}
	return ca.CrtPEM, ca.KeyPEM, nil
}

// frontProxyPKI is the front door's identity towards the apiserver: a CA
// (--requestheader-client-ca-file) and the client certificate it signed, as
// Talos's aggregator CA and front-proxy-client certificate.
type frontProxyPKI struct {
	caPEM, certPEM, keyPEM []byte
}

func newFrontProxyPKI() (frontProxyPKI, error) {
	ca, err := x509.NewSelfSignedCertificateAuthority(
		x509.ECDSA(true),
		x509.CommonName("front-proxy"),
		x509.NotAfter(time.Now().Add(certValidity)),
	)
	if err != nil {
		return frontProxyPKI{}, fmt.Errorf("kubeapi: front-proxy CA: %w", err)
	}
	kp, err := x509.NewKeyPair(ca,
		x509.CommonName(FrontProxyUser),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}),
		x509.NotBefore(time.Now().Add(-time.Minute)),
		x509.NotAfter(time.Now().Add(certValidity)),
	)
	if err != nil {
		return frontProxyPKI{}, fmt.Errorf("kubeapi: front-proxy client certificate: %w", err)
	}
	return frontProxyPKI{caPEM: ca.CrtPEM, certPEM: kp.CrtPEM, keyPEM: kp.KeyPEM}, nil
}

// certPool parses every CERTIFICATE block of pemData.
func certPool(pemData []byte) (*stdx509.CertPool, error) {
	pool := stdx509.NewCertPool()
	n := 0
	for rest := pemData; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := stdx509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("kubeapi: parse certificate: %w", err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("kubeapi: no CERTIFICATE in PEM data")
	}
	return pool, nil
}

// newToken returns 32 random hex characters.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("kubeapi: token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
