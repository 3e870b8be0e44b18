package live

import (
	"context"
	"time"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
)

// A node whose Talos API does not answer may be rebooting (a rollout or
// an upgrade that an earlier run started and did not see through): it is
// given a reboot's time, SilentBudget polled every SilentPoll (scaled), to
// come back before it counts as silent (I-V1, I-V2).
const (
	SilentBudget = 5 * time.Minute
	SilentPoll   = 10 * time.Second
)

// Probe asks kc's API the reference's way (I-3): kube.ProbeAttempts
// times, kube.ProbeInterval (scaled by env) apart; one failed attempt
// never means "down".
func Probe(ctx context.Context, env *phase.Env, kc KubeReader) (bool, error) {
	return kc.Probe(ctx, kube.ProbeAttempts, env.Scale(kube.ProbeInterval))
}

// Version is the Talos version node runs, asked through c. A node that
// does not answer is given SilentBudget to come back and asked again; when
// it does not come back, the first answer's error is returned.
func Version(ctx context.Context, in *phase.Input, c TalosReader, node string) (string, error) {
	v, err := c.Version(ctx, node)
	if err == nil {
		return v, nil
	}
	budget := in.Env.Scale(SilentBudget)
	in.Out.Info("the Talos API of %s does not answer (%v); waiting up to %s for it (a node rebooting?)", node, err, budget)
	if werr := c.WaitReachable(ctx, node, budget, in.Env.Scale(SilentPoll), nil); werr != nil {
		return "", err
	}
	return c.Version(ctx, node)
}
