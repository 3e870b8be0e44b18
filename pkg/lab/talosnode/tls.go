package talosnode

import (
	"context"
	"crypto/tls"
	stdx509 "crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// errNotAuthorized is the Talos authorizer's answer.
var errNotAuthorized = status.Error(codes.PermissionDenied, "not authorized")

// errNoTrustd is a worker that cannot get its apid certificate yet: no
// control plane of its cluster runs trustd.
var errNoTrustd = errors.New("waiting for trustd: no control plane of the cluster is up to issue the apid certificate")

// serverTLS is apid's TLS configuration for a configured node: a server
// certificate for the node's addresses and hostname issued by the OS CA
// (machine.ca; a worker, which holds only the CA certificate, gets it from
// a control plane's trustd: issuer), and client certificates required to
// chain to the OS CA or one of machine.acceptedCAs.
func serverTLS(mc *machineConfig, issuer *x509.PEMEncodedCertificateAndKey, addr netip.Addr, hostname string) (*tls.Config, error) {
	if issuer == nil {
		return nil, errNoTrustd
	}
	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(issuer)
	if err != nil {
		return nil, fmt.Errorf("machine.ca: %w", err)
	}
	ips := []net.IP{addr.AsSlice(), net.IPv4(127, 0, 0, 1)}
	dns := []string{hostname, "localhost"}
	for _, san := range mc.certSANs {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else if san != "" {
			dns = append(dns, san)
		}
	}
	pair, err := x509.NewKeyPair(ca,
		x509.CommonName(hostname),
		x509.IPAddresses(ips),
		x509.DNSNames(dns),
		x509.NotBefore(time.Now().Add(-10*time.Second)),
		x509.NotAfter(time.Now().Add(24*time.Hour)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}),
	)
	if err != nil {
		return nil, fmt.Errorf("apid server certificate: %w", err)
	}
	pool := stdx509.NewCertPool()
	for _, pem := range mc.acceptedCAs {
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("machine.ca / acceptedCAs: not a PEM certificate")
		}
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{*pair.Certificate},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}, nil
}

// maintenanceTLS is the maintenance API's TLS: a self-signed certificate
// and no client authentication (talosctl --insecure).
func maintenanceTLS(addr netip.Addr) (*tls.Config, error) {
	ca, err := x509.NewSelfSignedCertificateAuthority(x509.ECDSA(true),
		x509.IPAddresses([]net.IP{addr.AsSlice()}),
		x509.NotAfter(time.Now().Add(24*time.Hour)))
	if err != nil {
		return nil, fmt.Errorf("maintenance certificate: %w", err)
	}
	crt, err := tls.X509KeyPair(ca.CrtPEM, ca.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("maintenance certificate: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{crt}}, nil
}

// peerRoles are the Talos roles of the caller: the Organization of its
// client certificate (os:admin, os:reader, …). Callers without a
// certificate (maintenance mode) are readers.
func peerRoles(ctx context.Context) role.Set {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return role.MakeSet()
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return role.MakeSet(role.Reader)
	}
	roles, _ := role.Parse(info.State.PeerCertificates[0].Subject.Organization)
	return roles
}

// methodRoles is Talos's authorization table for the simulated methods
// (machined's rules); anything else needs os:admin.
func methodRoles(method string) role.Set {
	all := role.MakeSet(role.Admin, role.Operator, role.Reader)
	switch method {
	case "/machine.MachineService/Version", "/machine.MachineService/ServiceList",
		"/machine.MachineService/Events", "/machine.MachineService/List",
		"/cluster.ClusterService/HealthCheck",
		"/cosi.resource.State/Get", "/cosi.resource.State/List", "/cosi.resource.State/Watch":
		return all
	case "/machine.MachineService/ApplyConfiguration":
		// readers only in maintenance mode, checked by the handler
		return role.MakeSet(role.Admin, role.Reader)
	case "/machine.MachineService/EtcdMemberList", "/machine.MachineService/EtcdStatus":
		return role.MakeSet(role.Admin, role.Operator, role.Reader, role.EtcdBackup)
	case "/machine.MachineService/EtcdSnapshot":
		return role.MakeSet(role.Admin, role.Operator, role.EtcdBackup)
	case "/machine.MachineService/Reboot", "/machine.MachineService/Shutdown",
		"/machine.MachineService/ImagePull", "/machine.ImageService/Pull":
		return role.MakeSet(role.Admin, role.Operator)
	default:
		return role.MakeSet(role.Admin)
	}
}

// authorize refuses a caller whose roles the method does not allow.
func authorize(ctx context.Context, method string) error {
	if !methodRoles(method).IncludesAny(peerRoles(ctx)) {
		return errNotAuthorized
	}
	return nil
}
