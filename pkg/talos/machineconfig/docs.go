package machineconfig

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// The structs below are the YAML shapes of the Talos documents talosc
// patches in. Field order is the order written. The machinery decodes them
// strictly when a patch is loaded, and every generated config is validated,
// so a wrong key fails the golden tests rather than a node.

// header starts every typed (non-v1alpha1) Talos document.
type header struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
}

func kind(k string) header { return header{APIVersion: "v1alpha1", Kind: k} }

type linkAliasDoc struct {
	header   `yaml:",inline"`
	Name     string       `yaml:"name"`
	Selector linkSelector `yaml:"selector"`
}

type linkSelector struct {
	Match string `yaml:"match"`
}

type dhcp4Doc struct {
	header `yaml:",inline"`
	Name   string `yaml:"name"`
}

type linkDoc struct {
	header    `yaml:",inline"`
	Name      string        `yaml:"name"`
	MTU       int           `yaml:"mtu,omitempty"`
	Addresses []linkAddress `yaml:"addresses,omitempty"`
	Routes    []linkRoute   `yaml:"routes,omitempty"`
}

type linkAddress struct {
	Address string `yaml:"address"`
}

type linkRoute struct {
	Destination string `yaml:"destination,omitempty"`
	Gateway     string `yaml:"gateway,omitempty"`
	Metric      int    `yaml:"metric,omitempty"`
	MTU         int    `yaml:"mtu,omitempty"`
	Table       string `yaml:"table,omitempty"`
}

type layer2VIPDoc struct {
	header `yaml:",inline"`
	Name   string `yaml:"name"`
	Link   string `yaml:"link"`
}

type routingRuleDoc struct {
	header `yaml:",inline"`
	Name   string `yaml:"name"`
	Src    string `yaml:"src,omitempty"`
	Table  string `yaml:"table"`
	FwMark uint32 `yaml:"fwMark,omitempty"`
	FwMask uint32 `yaml:"fwMask,omitempty"`
}

type resolverDoc struct {
	header      `yaml:",inline"`
	Nameservers []nameserver `yaml:"nameservers"`
}

type nameserver struct {
	Address string `yaml:"address"`
}

type kubeSpanDoc struct {
	header  `yaml:",inline"`
	Enabled bool            `yaml:"enabled"`
	MTU     int             `yaml:"mtu,omitempty"`
	Filters kubeSpanFilters `yaml:"filters"`
}

type kubeSpanFilters struct {
	Endpoints []string `yaml:"endpoints"`
}

type kubeNodeDoc struct {
	header `yaml:",inline"`
	NodeIP nodeIP            `yaml:"nodeIP"`
	Labels map[string]string `yaml:"labels,omitempty"`
}

type nodeIP struct {
	ValidSubnets []string `yaml:"validSubnets"`
}

type kubeletDoc struct {
	header    `yaml:",inline"`
	ExtraArgs map[string]string `yaml:"extraArgs"`
}

type unattendedInstallDoc struct {
	header       `yaml:",inline"`
	Provisioning provisioning `yaml:"provisioning"`
}

type provisioning struct {
	DiskSelector linkSelector `yaml:"diskSelector"`
	Wipe         bool         `yaml:"wipe"`
}

type inlineManifestDoc struct {
	header   `yaml:",inline"`
	Name     string `yaml:"name"`
	Manifest string `yaml:"manifest"`
}

type talosAPIAccessDoc struct {
	header                      `yaml:",inline"`
	AllowedRoles                []string `yaml:"allowedRoles"`
	AllowedKubernetesNamespaces []string `yaml:"allowedKubernetesNamespaces"`
}

type staticPodDoc struct {
	header `yaml:",inline"`
	Name   string `yaml:"name"`
	Pod    any    `yaml:"pod"`
}

// m is a YAML mapping (keys are written sorted).
type m = map[string]any

// render writes docs as one multi-document YAML text.
func render(docs ...any) (string, error) {
	var buf bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(d); err != nil {
			return "", fmt.Errorf("render %T: %w", d, err)
		}
		if err := enc.Close(); err != nil {
			return "", fmt.Errorf("render %T: %w", d, err)
		}
	}
	return buf.String(), nil
}

// patch renders docs into a named patch.
func patch(name string, docs ...any) (NamedPatch, error) {
	text, err := render(docs...)
	if err != nil {
		return NamedPatch{}, fmt.Errorf("patch %s: %w", name, err)
	}
	return NamedPatch{Name: name, YAML: text}, nil
}
