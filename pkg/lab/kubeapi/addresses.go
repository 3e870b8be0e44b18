package kubeapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// addresses are the API's addresses besides the one Start was given: the
// other VIPs its control planes carry (an API VIP being moved), on the
// same port, each behind its own gate and with its own serving
// certificate.
type addresses struct {
	// caCert and caKey sign the serving certificates (caKey empty: a
	// Server started with ServingCertPEM cannot add addresses); sans are
	// the extra names every one carries.
	caCert, caKey []byte
	sans          []netip.Addr
	port          int
	// primary is the serving certificate of the address Start was given.
	primary tls.Certificate

	mu     sync.Mutex
	gates  map[netip.Addr]*gate
	certs  map[netip.Addr]*tls.Certificate
	closed bool // for good (Server.Close)
}

func newAddresses(o Options, port int, primary tls.Certificate) *addresses {
	return &addresses{
		caCert: o.CACertPEM, caKey: o.CAKeyPEM, sans: o.ExtraSANs, port: port, primary: primary,
		gates: map[netip.Addr]*gate{}, certs: map[netip.Addr]*tls.Certificate{},
	}
}

// certificate is the front door's GetCertificate: the serving
// certificate of the address the client dialled (clients dialling an
// address send no server name to choose by).
func (a *addresses) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if tcp, ok := hello.Conn.LocalAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(tcp.IP); ok {
			if c, ok := a.certs[ip.Unmap()]; ok {
				return c, nil
			}
		}
	}
	return &a.primary, nil
}

// set opens (listening on addr at the API's port, with a serving
// certificate for addr) or closes the API on addr.
func (a *addresses) set(addr netip.Addr, on bool, serve func(net.Listener)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch g, ok := a.gates[addr]; {
	case a.closed:
		return errors.New("kubeapi: the server is closed")
	case ok:
		return g.set(on)
	case !on:
		return nil
	}
	if len(a.caKey) == 0 {
		return fmt.Errorf("kubeapi: no CA key to sign a serving certificate for %s (the server was started with ServingCertPEM)", addr)
	}
	certPEM, keyPEM, err := SignServingCert(a.caCert, a.caKey, addr, a.sans...)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("kubeapi: serving certificate for %s: %w", addr, err)
	}
	ln, err := labnet.Listen(context.Background(), net.JoinHostPort(addr.String(), strconv.Itoa(a.port)))
	if err != nil {
		return fmt.Errorf("kubeapi: serve on %s: %w", addr, err)
	}
	a.certs[addr] = &cert
	a.gates[addr] = newGate(ln, serve)
	return nil
}

// close shuts every gate for good.
func (a *addresses) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for _, g := range a.gates {
		g.close()
	}
}

// SetServingOn opens or closes the API on addr, as a VIP of that address
// appears on and disappears from the network: the primary address (the
// one Start was given) is SetServing's; any other is served on the same
// port by the same front door, with a serving certificate for addr signed
// by the cluster CA (which needs Options.CAKeyPEM), so that an API VIP
// moved in the control planes' configurations answers on its new address.
func (s *Server) SetServingOn(addr netip.Addr, on bool) error {
	if addr == s.primary {
		return s.SetServing(on)
	}
	return s.more.set(addr, on, s.serveFront)
}
