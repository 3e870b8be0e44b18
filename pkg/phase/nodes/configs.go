package nodes

import (
	"context"
	"fmt"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase/nodes/kubeupgrade"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// registerInstallers registers every installer's schematic with the Image
// Factory (idempotent; the factory serves installers of known schematics
// only).
func registerInstallers(ctx context.Context, fc *factory.Client, plan *factory.InstallerPlan) error {
	for _, inst := range plan.Installers {
		id, err := fc.CreateSchematic(ctx, inst.Schematic)
		if err != nil {
			return fmt.Errorf("register the installer schematic of pool(s) %v with the image factory: %w", inst.Pools, err)
		}
		if id != inst.SchematicID {
			return fmt.Errorf("the image factory gave schematic id %s for pool(s) %v, talosc computed %s", id, inst.Pools, inst.SchematicID)
		}
	}
	return nil
}

// configInput is the generation input of the run's nodes and the installer
// plan it took every pool's installer from; obs.hasEndpoint must hold.
func (r *run) configInput() (machineconfig.Input, *factory.InstallerPlan, error) {
	k := r.obs.netKubernetes()
	return machineconfig.Assemble(r.cfg, r.id, machineconfig.API{Advertised: k.Advertised, VIP: k.VIP}, r.cloud.Project())
}

// generate is m's configuration for the Talos version it runs (the pin
// for a new machine: its document layout). A new machine
// (images zero) boots at the pinned Kubernetes version; an existing one is
// generated at the images it runs, so that only the Kubernetes upgrade
// moves its components (one step, component and node at a time, I-13),
// and at the lowest version they run for what follows the node's version
// (the Proxmox return path's kube-proxy, I-R12).
func (r *run) generate(input machineconfig.Input, m config.Machine, images machineconfig.KubernetesImages) (*machineconfig.Config, error) {
	n := machineconfig.Node{Machine: m, TalosVersion: r.obs.talosVersionOf(m, r.cfg.Talos.Version), KubernetesVersion: r.cfg.Kubernetes.Version}
	if images != (machineconfig.KubernetesImages{}) {
		v, err := kubeupgrade.Lowest([]kubeupgrade.Node{{Machine: m, Images: images}})
		if err != nil {
			return nil, err
		}
		if m.Role != config.RoleControlPlane {
			images = machineconfig.KubernetesImages{Kubelet: images.Kubelet} // a worker runs no other component
		}
		n.KubernetesVersion, n.Images = v.String(), images
	}
	return machineconfig.Generate(input, n)
}
