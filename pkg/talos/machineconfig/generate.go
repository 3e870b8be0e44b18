package machineconfig

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/config/validation"

	"github.com/talosc/talosc/pkg/config"
)

// APIPort is the Kubernetes API port of the cluster endpoint.
const APIPort = 6443

// Config is one node's generated, validated machine configuration.
type Config struct {
	hostname string
	contract *talosconfig.VersionContract
	provider talosconfig.Provider
	encoded  []byte
	patches  []string
	warnings []string
	maxSize  int
	// preUser is the config before cluster.yaml's config_patches, kept
	// until validation to tell the user's patches from a talosc bug.
	preUser talosconfig.Provider
}

// ClientMode is the validation.RuntimeMode talosc validates configs in: a
// VM that installs Talos to disk, not a container.
type ClientMode struct{}

// String implements validation.RuntimeMode.
func (ClientMode) String() string { return "talosc" }

// RequiresInstall implements validation.RuntimeMode: nodes install to disk.
func (ClientMode) RequiresInstall() bool { return true }

// InContainer implements validation.RuntimeMode: nodes are VMs.
func (ClientMode) InContainer() bool { return false }

// Generate builds node n's machine configuration: machinery's generated
// control-plane or worker config for the node's contract and Kubernetes
// version with the node's Images set on it, then the patch stack (see
// stack), strategic-merge patches only.
// The result is validated as a client would (ClientMode) and, where the
// provider has one, checked against its user-data size limit.
func Generate(in Input, n Node) (*Config, error) {
	if err := in.check(); err != nil {
		return nil, fmt.Errorf("machine config: %w", err)
	}
	host := n.Machine.Hostname
	pool, err := in.checkNode(n)
	if err != nil {
		return nil, fmt.Errorf("machine config: %w", err)
	}
	contract, err := ContractFor(n.TalosVersion)
	if err != nil {
		return nil, fmt.Errorf("machine config of %s: %w", host, err)
	}
	kube, err := config.ParseVersion(n.KubernetesVersion)
	if err != nil {
		return nil, fmt.Errorf("machine config of %s: kubernetes version: %w", host, err)
	}
	n.KubernetesVersion = kube.String()
	contrib, err := in.contribution(n)
	if err != nil {
		return nil, fmt.Errorf("machine config of %s: %w", host, err)
	}
	if err := checkContribution(contrib); err != nil {
		return nil, fmt.Errorf("machine config of %s: %w", host, err)
	}
	base, err := baseConfig(&in, n, contract, strings.TrimPrefix(kube.String(), "v"), contrib.InstallDisk)
	if err != nil {
		return nil, fmt.Errorf("machine config of %s: %w", host, err)
	}
	if base, err = n.Images.apply(base, n.controlPlane()); err != nil {
		return nil, fmt.Errorf("machine config of %s: %w", host, err)
	}
	patches, err := stack(&in, n, pool, contract, contrib)
	if err != nil {
		return nil, fmt.Errorf("machine config of %s: %w", host, err)
	}
	c, err := applyStack(base, patches)
	if err != nil {
		return nil, fmt.Errorf("machine config of %s: %w", host, err)
	}
	c.hostname, c.contract, c.maxSize = host, contract, contrib.MaxUserData
	if err := c.finish(); err != nil {
		return nil, fmt.Errorf("machine config of %s: %w", host, err)
	}
	return c, nil
}

// baseConfig is machinery's generated config of the node's role.
func baseConfig(in *Input, n Node, contract *talosconfig.VersionContract, kube, disk string) (talosconfig.Provider, error) {
	gen, err := generate.NewInput(in.Cluster.Name, Endpoint(in.AdvertisedAddress), kube,
		generate.WithVersionContract(contract),
		generate.WithSecretsBundle(in.Secrets),
		generate.WithInstallImage(in.Installers[n.Machine.Pool]),
		generate.WithInstallDisk(disk),
		generate.WithAdditionalSubjectAltNames(in.sans()),
	)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	typ := machine.TypeWorker
	if n.controlPlane() {
		typ = machine.TypeControlPlane
	}
	cfg, err := gen.Config(typ)
	if err != nil {
		return nil, fmt.Errorf("generate %s config: %w", typ, err)
	}
	return cfg, nil
}

// Endpoint is the cluster endpoint for an advertised address:
// https://<address>:6443.
func Endpoint(advertised string) string {
	return "https://" + net.JoinHostPort(advertised, strconv.Itoa(APIPort))
}

// sans returns the certificate SANs: the advertised address, the VIP, then
// the extras, without duplicates.
func (in *Input) sans() []string {
	all := []string{in.AdvertisedAddress}
	if in.VIP.IsValid() {
		all = append(all, in.VIP.String())
	}
	var out []string
	for _, s := range append(all, in.ExtraSANs...) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// checkContribution refuses a provider contribution talosc cannot use.
func checkContribution(c Contribution) error {
	if c.InstallDisk == "" {
		return errors.New("the provider gave no install disk")
	}
	names := patchNamePattern()
	for _, p := range c.Patches {
		if !names.MatchString(p.Name) {
			return fmt.Errorf("provider patch name %q must match %s", p.Name, names)
		}
	}
	return nil
}

// applyStack applies the patches one at a time, so an error names the
// patch. JSON6902 patches are refused: Talos configs are multi-document.
func applyStack(base talosconfig.Provider, patches []NamedPatch) (*Config, error) {
	cur := configpatcher.WithConfig(base)
	var userStart talosconfig.Provider
	names := make([]string, 0, len(patches))
	for _, np := range patches {
		if userStart == nil && isUserPatch(np.Name) {
			cfg, err := cur.Config()
			if err != nil {
				return nil, err
			}
			userStart = cfg
		}
		p, err := configpatcher.LoadPatch([]byte(np.YAML))
		if err != nil {
			return nil, fmt.Errorf("patch %s: %w", np.Name, err)
		}
		if _, ok := p.(configpatcher.StrategicMergePatch); !ok {
			return nil, fmt.Errorf("patch %s is a JSON6902 patch (a list of operations); Talos machine configs are multi-document, so write it as a strategic-merge patch (a YAML mapping, e.g. machine: {...})", np.Name)
		}
		out, err := configpatcher.Apply(cur, []configpatcher.Patch{p})
		if err != nil {
			return nil, fmt.Errorf("patch %s: %w", np.Name, err)
		}
		cur = out
		names = append(names, np.Name)
	}
	cfg, err := cur.Config()
	if err != nil {
		return nil, err
	}
	return &Config{provider: cfg, patches: names, preUser: userStart}, nil
}

// isUserPatch tells cluster.yaml's config_patches from generated patches.
func isUserPatch(name string) bool { return strings.Contains(name, "config_patches[") }

// finish validates and encodes the config.
func (c *Config) finish() error {
	if err := c.Validate(); err != nil {
		if c.preUser != nil {
			if _, preErr := c.preUser.ValidateAsClient(ClientMode{}, validation.WithLocal()); preErr == nil {
				return fmt.Errorf("config_patches make the machine config invalid: %w", err)
			}
		}
		return err
	}
	c.preUser = nil
	b, err := c.provider.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	c.encoded = b
	if c.maxSize > 0 && c.UserDataSize() > c.maxSize {
		return fmt.Errorf("the config is %d bytes base64-encoded, over the provider's user-data limit of %d bytes; shorten config_patches or security rules",
			c.UserDataSize(), c.maxSize)
	}
	return nil
}

// Validate runs machinery's client-side validation (ClientMode).
func (c *Config) Validate() error {
	warnings, err := c.provider.ValidateAsClient(ClientMode{}, validation.WithLocal())
	c.warnings = warnings
	if err != nil {
		return fmt.Errorf("invalid machine config: %w", err)
	}
	return nil
}

// Bytes is the config as YAML documents, without comments.
func (c *Config) Bytes() []byte { return bytes.Clone(c.encoded) }

// UserDataSize is the size of Bytes once base64-encoded (as Nova stores
// user_data).
func (c *Config) UserDataSize() int { return base64.StdEncoding.EncodedLen(len(c.encoded)) }

// Contract is the Talos config contract the config was generated for.
func (c *Config) Contract() *talosconfig.VersionContract { return c.contract }

// Provider is the config as machinery sees it (for diffs and reads).
func (c *Config) Provider() talosconfig.Provider { return c.provider }

// Hostname is the node's hostname.
func (c *Config) Hostname() string { return c.hostname }

// Patches names the applied patches in order.
func (c *Config) Patches() []string { return slices.Clone(c.patches) }

// Warnings are machinery's validation warnings.
func (c *Config) Warnings() []string { return slices.Clone(c.warnings) }
