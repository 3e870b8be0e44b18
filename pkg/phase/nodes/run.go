package nodes

import (
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/ui"
)

// The reference's budgets (§3.2 I-X2), scaled by TALOSC_TIME_SCALE.
const (
	reachableBudget = 900 * time.Second
	reachablePoll   = 15 * time.Second
	bootstrapBudget = 5 * time.Minute
	readyBudget     = 900 * time.Second
	readyPoll       = 15 * time.Second
	healthBudget    = 10 * time.Minute
	addressBudget   = 600 * time.Second
	addressPoll     = 15 * time.Second
	// settleGrace is how long a restart-requiring apply may take to
	// reboot the node (I-R7): its boot ID must change within it.
	settleGrace = 120 * time.Second
	settlePoll  = 5 * time.Second
	// resetBudget bounds a graceful reset (I-S13, I-X2).
	resetBudget = 10 * time.Minute
	// drainBudget is kubectl drain's --timeout 5m (I-X1).
	drainBudget = 5 * time.Minute
)

// run is one converge of the nodes phase: its inputs, what it observed,
// and what it records.
type run struct {
	in    *phase.Input
	cfg   *config.Cluster
	cloud provider.Cloud
	plan  *provider.Plan
	out   sections.Nodes
	// desired are the machines cluster.yaml describes, control planes first.
	desired []config.Machine
	id      *identity.Identity
	// obs is what the run observed of the cluster (validate builds it).
	obs *observed
	// clients are the Kubernetes and Talos sessions every step shares.
	clients *clients
	// confirmed are the removals the run's validation checked and
	// confirmed: scale-down removes no other node.
	confirmed []string
	// etcdAtBootstrap: discover could not read some control planes
	// because they had no address yet (machines a killed run created and
	// never started) and none showed that etcd ran; the bootstrap asks
	// them all again once they run.
	etcdAtBootstrap bool
	// upAtDiscover: the cluster was up when the run started (a new
	// control plane then joins a running etcd; on a first build it does
	// not disturb anything).
	upAtDiscover bool
	// moved: the Talos rollout just run moved nodes onto a new version,
	// so the configurations are rolled out again in the step after.
	moved bool
	// move is the API endpoint's move, read once (movedEndpoint).
	move *endpointMove
	// backedUp: the backup before a risky change was taken (or planned)
	// in this run (backupFirst).
	backedUp bool
}

func newRun(in *phase.Input, cloud provider.Cloud) *run {
	r := &run{in: in, cfg: in.Config, cloud: cloud, plan: in.NewPlan(), desired: in.Config.Hostnames()}
	r.out.Provider = in.Config.Provider()
	r.obs = newObserved(nil, nil, provider.Image{}, nil)
	r.clients = newClients(in.Config, defaultSeams(in.Env))
	return r
}

// scaled is d times TALOSC_TIME_SCALE.
func (r *run) scaled(d time.Duration) time.Duration { return r.in.Env.Scale(d) }

// cp1 is the first control plane, talosconfig's endpoint and the node
// every Talos call goes through (reference §5.6).
func (r *run) cp1() config.Machine { return r.desired[0] }

// progressEvery is the least time between two "still waiting" lines.
const progressEvery = 10 * time.Second

// throttle passes at most one progress report per progressEvery (wall
// time, whatever TALOSC_TIME_SCALE says), the first after progressEvery.
func throttle(report func(elapsed time.Duration)) func(elapsed time.Duration) {
	next := time.Now().Add(progressEvery)
	return func(elapsed time.Duration) {
		if now := time.Now(); now.After(next) {
			next = now.Add(progressEvery)
			report(elapsed)
		}
	}
}

// waiting is a throttled "still waiting for host" progress line.
func (r *run) waiting(host string) func(time.Duration) { return waitingLine(r.in.Out, host) }

// waitingLine is a throttled "still waiting for host" progress line on out.
func waitingLine(out *ui.Printer, host string) func(time.Duration) {
	return throttle(func(elapsed time.Duration) {
		out.Info("  still waiting for %s after %s", host, elapsed.Round(time.Second))
	})
}

// clientFile is the path of a client file of the cluster directory and
// whether it exists (not empty).
func (r *run) clientFile(name string) (string, bool) { return phase.ClientFile(r.cfg, name) }
