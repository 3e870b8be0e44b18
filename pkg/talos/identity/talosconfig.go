package identity

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"gopkg.in/yaml.v3"
)

// Talosconfig builds the talosctl client config for the cluster: one context
// named after the cluster, trusting the identity's Talos API (OS) CA, with a
// new admin client certificate and exactly one endpoint; no default nodes.
func Talosconfig(id *Identity, clusterName, endpoint string) (*clientconfig.Config, error) {
	if !id.valid() {
		return nil, errors.New("build talosconfig: no cluster identity")
	}

	if clusterName == "" {
		return nil, errors.New("build talosconfig: empty cluster name")
	}

	if strings.TrimSpace(endpoint) == "" {
		return nil, errors.New("build talosconfig: empty endpoint; talosctl needs the address of a real control plane")
	}

	// What generate.Input.Talosconfig does, without a whole config Input.
	crt, err := id.Bundle().GenerateTalosAPIClientCertificate(role.MakeSet(role.Admin))
	if err != nil {
		return nil, fmt.Errorf("build talosconfig: issue admin client certificate: %w", err)
	}

	return clientconfig.NewConfig(clusterName, []string{endpoint}, id.Bundle().Certs.OS.Crt, crt), nil
}

// WriteTalosconfig writes the talosconfig (see Talosconfig) to path with mode
// 0600, atomically. Converge rewrites it every run, so an existing file is
// replaced.
func WriteTalosconfig(path string, id *Identity, clusterName, endpoint string) error {
	cfg, err := Talosconfig(id, clusterName, endpoint)
	if err != nil {
		return err
	}

	data, err := cfg.Bytes()
	if err != nil {
		return fmt.Errorf("marshal talosconfig: %w", err)
	}

	if err := writeFileAtomic(path, data, writeOptions{replace: true}); err != nil {
		return fmt.Errorf("write talosconfig: %w", err)
	}

	return nil
}

// ReadTalosconfigEndpoint returns the endpoint recorded in a talosconfig: the
// first endpoint of its current context. A missing, truncated, hand-edited or
// non-mapping file has no recorded endpoint (ok false, no error, I-A4); only
// an unreadable existing file is an error.
func ReadTalosconfigEndpoint(path string) (endpoint string, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}

	if err != nil {
		return "", false, fmt.Errorf("read talosconfig: %w", err)
	}

	// Decoded minimally rather than with clientconfig.FromBytes, which
	// panics on a context left empty by truncation. A file that does not
	// decode only means "nothing recorded".
	var doc struct {
		Context  string `yaml:"context"`
		Contexts map[string]*struct {
			Endpoints []string `yaml:"endpoints"`
		} `yaml:"contexts"`
	}

	if yaml.Unmarshal(data, &doc) != nil {
		return "", false, nil
	}

	ctx := doc.Contexts[doc.Context]
	if ctx == nil || len(ctx.Endpoints) == 0 || strings.TrimSpace(ctx.Endpoints[0]) == "" {
		return "", false, nil
	}

	return strings.TrimSpace(ctx.Endpoints[0]), true, nil
}

// EndpointInput is what selecting the talosctl endpoint needs (reference §5.6).
type EndpointInput struct {
	// Hostname is cp-01's hostname, <cluster>-controlplane-01.
	Hostname string
	// Address is cp-01's real address, resolved by the caller in the
	// reference order: SDN static address, then the provider inventory (guest
	// agent), then the endpoint recorded in talosconfig. Empty when unknown.
	Address string
	// TailscaleActive is config.Tailscale.Active(): a section with an auth key.
	TailscaleActive bool
	// MagicDNSSuffix is the tailnet domain ("tailnet-x.ts.net"). Empty uses
	// the bare hostname, which MagicDNS resolves through its search domain.
	MagicDNSSuffix string
	// Forbidden are the kube-API VIP and floating IP: they move between
	// control planes and are never a Talos API endpoint.
	Forbidden []string
}

// TalosEndpoint selects the one talosconfig endpoint: cp-01's MagicDNS name
// with active Tailscale, else its real address. It refuses an unknown address
// and any address in in.Forbidden (the kube-API VIP).
func TalosEndpoint(in EndpointInput) (string, error) {
	host := strings.TrimSpace(in.Hostname)
	if host == "" {
		return "", errors.New("select talos endpoint: empty control-plane hostname")
	}

	if in.TailscaleActive {
		if suffix := strings.Trim(strings.TrimSpace(in.MagicDNSSuffix), "."); suffix != "" {
			return host + "." + suffix, nil
		}

		return host, nil
	}

	addr := strings.TrimSpace(in.Address)
	if addr == "" {
		return "", fmt.Errorf("no address known for %s: talosctl needs a real control-plane address without "+
			"tailscale (the kube-API VIP is never used); check that the node runs and reports its address "+
			"(guest agent), or configure tailscale", host)
	}

	for _, f := range in.Forbidden {
		if f != "" && sameHost(addr, f) {
			return "", fmt.Errorf("refusing %s as the talos endpoint of %s: it is the kube-API VIP, which moves "+
				"between control planes; talosctl needs the node's own address", addr, host)
		}
	}

	return addr, nil
}

// sameHost compares the host parts of two endpoints ("10.0.0.5",
// "10.0.0.5:50000", "[fd00::5]:50000"), as IP addresses when both parse.
func sameHost(a, b string) bool {
	ha, hb := hostOf(a), hostOf(b)

	pa, errA := netip.ParseAddr(ha)
	pb, errB := netip.ParseAddr(hb)

	if errA == nil && errB == nil {
		return pa.Unmap() == pb.Unmap()
	}

	return strings.EqualFold(strings.TrimSuffix(ha, "."), strings.TrimSuffix(hb, "."))
}

// hostOf strips a port and IPv6 brackets from an endpoint.
func hostOf(s string) string {
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}

	return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
}
