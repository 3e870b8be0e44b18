package tcnodes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// ConfigsOptions configures "tc-nodes configs".
type ConfigsOptions struct {
	Streams cli.Streams
	// Dir is the cluster directory (the root's -C flag).
	Dir string
	// Out is where the configs and the talosconfig are written.
	Out string
	// Endpoint is the advertised Kubernetes API address.
	Endpoint string
	// VIP is the control planes' Layer 2 API VIP.
	VIP string
	// TalosEndpoint is talosconfig's one endpoint (a control plane's real
	// address or its MagicDNS name; never the VIP).
	TalosEndpoint string
	// Throwaway generates an identity in memory instead of reading
	// talossecrets.yaml; nothing but the configs is written.
	Throwaway bool

	// Load reads cluster.yaml; LookupEnv reads the environment.
	Load      func(dir string, o config.LoadOptions) (*config.Cluster, error)
	LookupEnv func(string) (string, bool)
}

func newConfigsCommand(s cli.Streams, runF func(context.Context, *ConfigsOptions) error) *cobra.Command {
	o := &ConfigsOptions{Streams: s, Load: config.Load, LookupEnv: os.LookupEnv}
	cmd := &cobra.Command{
		Use:   "configs --out DIR",
		Short: "Write every node's Talos machine configuration and a talosconfig, for inspection or hand use",
		Long: `configs renders the machine configuration of every node cluster.yaml describes,
exactly as converge would generate it for a new node (target Talos and
Kubernetes versions), and a talosconfig. Files are written mode 0600 into
--out (created 0700). The cluster identity comes from talossecrets.yaml; with
--throwaway-identity a new one is made in memory and never saved (the configs
are then good for reading only).

` + cli.ExitCodesHelp,
		Example: `  # Inspect what a Proxmox cluster's nodes will run
  tc-nodes configs -C prod --out /tmp/prod-configs

  # OpenStack: the API addresses come from the network phase
  tc-nodes configs -C prod --out /tmp/c --endpoint 203.0.113.10 --vip 10.0.0.5 --talos-endpoint 10.0.0.11`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Out == "" {
				return cli.Usagef("--out DIR is required")
			}
			dir, err := cmd.Flags().GetString("dir")
			if err != nil {
				return err
			}
			o.Dir = dir
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Out, "out", "", "write the configs into `DIR` (created 0700)")
	f.StringVar(&o.Endpoint, "endpoint", "", "the advertised Kubernetes API `ADDRESS` (default: kubeapi_vip from cluster.yaml)")
	f.StringVar(&o.VIP, "vip", "", "the control planes' API `VIP` (default: kubeapi_vip from cluster.yaml)")
	f.StringVar(&o.TalosEndpoint, "talos-endpoint", "", "talosconfig's endpoint: a control plane's real `ADDRESS` (default: cp-01's static or MagicDNS name)")
	f.BoolVar(&o.Throwaway, "throwaway-identity", false, "make a new identity in memory instead of reading talossecrets.yaml")
	return cmd
}

// Run writes the configs.
func (o *ConfigsOptions) Run(ctx context.Context) error {
	sections, err := plugin.ConfigSections(ctx, o.LookupEnv, plugin.SelfDir(), func(msg string) { fmt.Fprintf(o.Streams.ErrOut, "WARNING: %s\n", msg) })
	if err != nil {
		return err
	}
	cfg, err := o.Load(o.Dir, config.LoadOptions{PluginSections: sections})
	if err != nil {
		return cli.Usage(err)
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(o.Streams.ErrOut, "WARNING: %s\n", w)
	}
	api, err := o.api(cfg)
	if err != nil {
		return err
	}
	id, err := o.identity(cfg)
	if err != nil {
		return err
	}
	in, _, err := machineconfig.Assemble(cfg, id, api, "")
	if err != nil {
		return err
	}
	talosEndpoint, err := o.talosEndpoint(cfg, &in)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", o.Out, err)
	}
	for _, m := range cfg.Hostnames() {
		c, err := machineconfig.Generate(in, machineconfig.Node{Machine: m, TalosVersion: cfg.Talos.Version, KubernetesVersion: cfg.Kubernetes.Version})
		if err != nil {
			return err
		}
		p := filepath.Join(o.Out, m.Hostname+".yaml")
		if err := writeSecretFile(p, c.Bytes()); err != nil {
			return err
		}
		fmt.Fprintf(o.Streams.ErrOut, "wrote %s (%d bytes, Talos config contract %s)\n", p, len(c.Bytes()), c.Contract())
		for _, w := range c.Warnings() {
			fmt.Fprintf(o.Streams.ErrOut, "WARNING: %s: %s\n", m.Hostname, w)
		}
	}
	p := filepath.Join(o.Out, config.TalosconfigFile)
	if err := identity.WriteTalosconfig(p, id, cfg.Name, talosEndpoint); err != nil {
		return err
	}
	fmt.Fprintf(o.Streams.ErrOut, "wrote %s (endpoint %s)\n", p, talosEndpoint)
	return nil
}

// api resolves the API addresses from the flags and cluster.yaml.
func (o *ConfigsOptions) api(cfg *config.Cluster) (machineconfig.API, error) {
	api := machineconfig.API{Advertised: o.Endpoint}
	vip := cfg.Network.Cluster.KubeAPIVIP
	if cfg.Network.External != nil && cfg.Network.External.KubeAPIVIP.IsValid() {
		vip = cfg.Network.External.KubeAPIVIP
	}
	if o.VIP != "" {
		v, err := netip.ParseAddr(o.VIP)
		if err != nil {
			return machineconfig.API{}, cli.Usagef("--vip %q: %v", o.VIP, err)
		}
		vip = v
	}
	if !vip.IsValid() {
		return machineconfig.API{}, cli.Usagef("--vip is required: on %s the API VIP is the %s-kubeapi port's fixed address, which the network phase reports", cfg.Provider(), cfg.Name)
	}
	api.VIP = vip
	if api.Advertised == "" {
		if cfg.Provider() == config.ProviderOpenStack {
			return machineconfig.API{}, cli.Usagef("--endpoint is required: on openstack the API is advertised on the %s-kubeapi floating IP, which the network phase reports", cfg.Name)
		}
		api.Advertised = vip.String()
	}
	return api, nil
}

// talosEndpoint picks talosconfig's one endpoint (never the VIP).
func (o *ConfigsOptions) talosEndpoint(cfg *config.Cluster, in *machineconfig.Input) (string, error) {
	cp1 := cfg.Hostnames()[0]
	addr := o.TalosEndpoint
	if addr == "" {
		if a, ok := cfg.SDNAddress(cp1); ok {
			addr = a.String()
		}
	}
	ep, err := identity.TalosEndpoint(identity.EndpointInput{
		Hostname:        cp1.Hostname,
		Address:         addr,
		TailscaleActive: cfg.Tailscale.Active(),
		Forbidden:       []string{in.VIP.String(), in.AdvertisedAddress},
	})
	if err != nil {
		return "", cli.Usage(fmt.Errorf("talosconfig endpoint: %w (set --talos-endpoint to a control plane's real address)", err))
	}
	return ep, nil
}

// identity reads talossecrets.yaml, or makes a throwaway one in memory.
func (o *ConfigsOptions) identity(cfg *config.Cluster) (*identity.Identity, error) {
	if o.Throwaway {
		return identity.Generate(cfg.Talos.Version)
	}
	id, err := identity.Load(filepath.Join(cfg.Dir, config.TalosSecretsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, cli.Usagef("%s is missing in %s: converge creates the cluster identity (or restore it from backup); use --throwaway-identity to only look at the configs", config.TalosSecretsFile, cfg.Dir)
	}
	return id, err
}

// writeSecretFile writes data to path with mode 0600 from creation; an
// existing file is replaced and tightened.
func writeSecretFile(path string, data []byte) error {
	if err := identity.WriteKubeconfig(path, data); err != nil { // the same atomic 0600 write
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
