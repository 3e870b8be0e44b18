// Package network is the net phase: the cluster network, its security
// rules and the endpoints (the Kubernetes API VIP and its advertised
// address, the ingress VIP, one attachment per machine) the nodes phase
// builds machines on.
package network

import (
	"context"
	"errors"
	"time"

	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// Phase is the net phase.
type Phase struct{}

var _ phase.Phase = Phase{}

// Name is the section the phase owns.
func (Phase) Name() string { return phase.Net }

// Converge reconciles the network and reports the endpoints. Run without
// the image phase of this run upstream, it stands on the validation
// heading the pipe (sections.Validation) and records its fact.
func (Phase) Converge(ctx context.Context, in *phase.Input, sec *state.Section) error {
	cloud, inv, err := in.Inventory(ctx)
	if err != nil {
		return err
	}
	var fact *phase.Validated
	if !upstreamHolds(in, inv) {
		if fact, err = sections.Validation(in, inv, time.Now()); err != nil {
			return err
		}
	}
	plan := in.NewPlan()
	res, err := cloud.ReconcileNetwork(ctx, sections.NetworkSpec(in.Config), plan)
	sec.Plan = plan.Changes()
	if res == nil {
		return errors.Join(err, sec.SetOutputs(sections.Network{Validated: fact, Provider: in.Config.Provider()}))
	}
	if err := record(in, sec, res, fact); err != nil {
		return err
	}
	if err == nil {
		in.Out.Info("kubeapi advertised %s vip %s", orPending(res.Kubernetes.Advertised), orPending(addr(res.Kubernetes)))
	}
	return err
}

// upstreamHolds reports that the image phase of this run recorded a
// validation fact that still holds for inv, the inventory read now
// (sections.Upstream), so the net phase need not record it again: a
// saved or replayed image section, or one that failed, does not stand in
// for the validation.
func upstreamHolds(in *phase.Input, inv *provider.Inventory) bool {
	return sections.Upstream(in, inv, time.Now(), phase.Image) != nil
}

// Destroy removes every owned network resource.
func (Phase) Destroy(ctx context.Context, in *phase.Input, sec *state.Section) error {
	cloud, err := in.Env.Cloud(ctx, in)
	if err != nil {
		return err
	}
	plan := in.NewPlan()
	err = cloud.DestroyNetwork(ctx, plan)
	sec.Plan = plan.Changes()
	return err
}

// Status reports the network as it is.
func (Phase) Status(ctx context.Context, in *phase.Input, sec *state.Section) error {
	cloud, err := in.Env.Cloud(ctx, in)
	if err != nil {
		return err
	}
	res, err := cloud.CurrentNetwork(ctx, sections.NetworkSpec(in.Config))
	if err != nil {
		return err
	}
	st, err := cloud.Status(ctx)
	if err != nil {
		return err
	}
	in.Out.Info("%s", st.Summary)
	return sec.SetOutputs(sections.Network{Provider: in.Config.Provider(), Infrastructure: st, NetworkResult: *res})
}

// Check has nothing to report without credentials.
func (Phase) Check(context.Context, *phase.Input) (phase.Report, error) {
	return phase.Report{OK: true}, nil
}

func record(in *phase.Input, sec *state.Section, res *provider.NetworkResult, fact *phase.Validated) error {
	if !res.Kubernetes.VIP.IsValid() || res.Kubernetes.Advertised == "" {
		sec.Unknown = []string{"kubernetes"}
	}
	return sec.SetOutputs(sections.Network{Validated: fact, Provider: in.Config.Provider(), NetworkResult: *res})
}

func addr(e provider.Endpoint) string {
	if !e.VIP.IsValid() {
		return ""
	}
	return e.VIP.String()
}

func orPending(s string) string {
	if s == "" {
		return "(pending)"
	}
	return s
}
