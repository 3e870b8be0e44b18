package nodes

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// compute brings existing machines in line with what the provider manages
// in place, then creates the missing ones (reference §3.1 step 10).
func (r *run) compute(ctx context.Context) error {
	if err := r.cloud.ReconcileMachines(ctx, r.obs.inv, r.plan); err != nil {
		return err
	}
	return r.createMachines(ctx)
}

// backupBeforeJoin takes the backup before a control plane joins a live
// cluster's etcd (a membership change).
func (r *run) backupBeforeJoin(ctx context.Context, missing []config.Machine) error {
	i := slices.IndexFunc(missing, func(m config.Machine) bool { return m.Role == config.RoleControlPlane })
	if i < 0 || !r.upAtDiscover {
		return nil
	}
	return r.backupFirst(ctx, "adding control plane", missing[i].Hostname)
}

// createMachines generates the configurations of missing machines and
// creates them concurrently.
func (r *run) createMachines(ctx context.Context) error {
	var missing []config.Machine
	for _, m := range r.desired {
		if _, ok := r.obs.inv.Find(m.Hostname); !ok {
			missing = append(missing, m)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := r.backupBeforeJoin(ctx, missing); err != nil {
		return err
	}
	if !r.obs.hasEndpoint() {
		pending := make([]state.Change, len(missing))
		for i, m := range missing {
			pending[i] = state.Change{Action: state.ActionCreate, Kind: r.cloud.MachineKind(), Name: m.Hostname, Detail: "after the network phase allocates the API endpoint"}
		}
		return r.plan.Pending(errors.New("the network phase reported no Kubernetes API endpoint (VIP and advertised address); run tc-net converge first"), pending...)
	}
	input, installers, err := r.configInput()
	if err != nil {
		return err
	}
	fc, err := factory.ForCluster(r.in.Config, nil)
	if err != nil {
		return err
	}
	if err := registerInstallers(ctx, fc, installers); err != nil {
		return err
	}
	specs := make([]provider.MachineSpec, 0, len(missing))
	for _, m := range missing {
		mc, err := r.generate(input, m, machineconfig.KubernetesImages{})
		if err != nil {
			return err
		}
		att, _ := r.obs.attachment(m.Hostname)
		specs = append(specs, provider.MachineSpec{Machine: m, Config: mc.Bytes(), Image: r.obs.image, Attachment: att})
	}
	if r.obs.image.ID == "" {
		if err := r.plan.Pending(errors.New("the image phase reported no boot image; run tc-image converge first")); err != nil {
			return err
		}
	}
	created, err := r.cloud.CreateMachines(ctx, specs, r.plan)
	r.out.Machines = append(r.out.Machines, created...)
	slices.SortFunc(r.out.Machines, func(a, b provider.Machine) int { return cmp.Compare(a.Hostname, b.Hostname) })
	return err
}
