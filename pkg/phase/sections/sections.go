// Package sections holds the outputs the builtin phases hand to each other
// and to the front door through the state document: the image phase's boot
// image and the net phase's endpoints, which the nodes phase builds
// machines from, and the nodes phase's machines and nodes, which status
// shows. It is plain data: the front door and the plugins import it.
package sections

import (
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube/kubenode"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/state"
)

// Image is the image section's outputs.
type Image struct {
	Validated    *phase.Validated `json:"validated,omitempty"`
	Provider     string           `json:"provider"`
	TalosVersion string           `json:"talosVersion"`
	SchematicID  string           `json:"schematicID"`
	Artifact     string           `json:"artifact"`
	Image        provider.Image   `json:"image"`
}

// ReadImage returns the outputs of an earlier image phase in doc.
func ReadImage(doc *state.Document) (Image, bool, error) {
	return state.Outputs[Image](doc, phase.Image)
}

// Network is the net section's outputs: the provider and what it reported.
type Network struct {
	// Validated is set when the net phase ran first in its run.
	Validated *phase.Validated `json:"validated,omitempty"`
	Provider  string           `json:"provider"`
	// Infrastructure is the provider's status (status only).
	Infrastructure *provider.Status `json:"infrastructure,omitempty"`
	provider.NetworkResult
}

// ReadNetwork returns the outputs of an earlier net phase in doc.
func ReadNetwork(doc *state.Document) (Network, bool, error) {
	return state.Outputs[Network](doc, phase.Net)
}

// Nodes is the nodes section's outputs.
type Nodes struct {
	Provider string `json:"provider"`
	// Machines are the owned machines after the run.
	Machines []provider.Machine `json:"machines"`
	// Up reports that the Kubernetes API answered.
	Up bool `json:"up"`
	// Bootstrapped reports that the cluster has a kubeconfig (it was
	// bootstrapped by this run or an earlier one).
	Bootstrapped bool `json:"bootstrapped"`
	// TalosEndpoint is talosconfig's endpoint (a real control plane).
	TalosEndpoint string `json:"talosEndpoint,omitempty"`
	// KubernetesEndpoint is the API URL clients use.
	KubernetesEndpoint string `json:"kubernetesEndpoint,omitempty"`
	// Nodes are the Kubernetes nodes, when the API answered.
	Nodes []kubenode.Node `json:"nodes,omitempty"`
	// Observed, in a plan, is a digest of what the plan depended on (the
	// owned machines, the nodes' versions and states): a saved plan is
	// applied only while a fresh plan observes the same.
	Observed string `json:"observed,omitempty"`
	// Backup is the newest backup (status); nil when cluster.yaml
	// configures none.
	Backup *report.BackupCheck `json:"backup,omitempty"`
}

// NetworkSpec is what the net phase reconciles for cfg.
func NetworkSpec(cfg *config.Cluster) provider.NetworkSpec {
	hosts := cfg.Hostnames()
	ms := make([]provider.MachineNet, len(hosts))
	for i, h := range hosts {
		ms[i] = provider.MachineNet{Hostname: h.Hostname, Role: h.Role, Pool: h.Pool}
	}
	return provider.NetworkSpec{Machines: ms}
}
