package nodes

import (
	"context"
	"time"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/nodes/kubeupgrade"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// talosAPI is what the nodes phase asks of Talos, through one endpoint (a
// real control plane) on behalf of any node; *talosapi.Client satisfies it.
type talosAPI interface {
	WaitReachable(ctx context.Context, node string, budget, poll time.Duration, progress func(time.Duration)) error
	Version(ctx context.Context, node string) (string, error)
	MachineConfig(ctx context.Context, node string) ([]byte, error)
	ApplyConfiguration(ctx context.Context, node string, data []byte, dryRun bool) (talosapi.ApplyResult, error)
	WaitRebooted(ctx context.Context, node, previous string, budget, poll time.Duration, progress func(time.Duration)) error
	Bootstrap(ctx context.Context, node string, budget time.Duration) error
	Kubeconfig(ctx context.Context, node string) ([]byte, error)
	EtcdMembers(ctx context.Context, node string) ([]talosapi.Member, error)
	EtcdState(ctx context.Context, node string) (talosapi.EtcdState, error)
	EtcdRemoveMember(ctx context.Context, node string, id uint64) error
	EtcdForfeitLeadership(ctx context.Context, node string) error
	Reset(ctx context.Context, node string, o talosapi.ResetOptions) error
	Health(ctx context.Context, o talosapi.HealthOptions) error
	Schematic(ctx context.Context, node string) (string, error)
	Upgrade(ctx context.Context, node, installer string, progress func(string)) error
	Reboot(ctx context.Context, node string) (previousBootID string, err error)
	BootID(ctx context.Context, node string) (string, error)
	Close() error
	// the Kubernetes upgrade's calls
	kubeupgrade.Talos
}

// kubeAPI is what the nodes phase asks of Kubernetes; *kube.Client
// satisfies it.
type kubeAPI interface {
	Probe(ctx context.Context, attempts int, interval time.Duration) (bool, error)
	WaitReady(ctx context.Context, names []string, budget, poll time.Duration, progress func(ready, total int)) ([]kube.Node, error)
	Drain(ctx context.Context, node string, o kube.DrainOptions) error
	Uncordon(ctx context.Context, node string) error
	DeleteNode(ctx context.Context, node string) error
	// the Kubernetes upgrade's calls (its version and nodes are read
	// here too)
	kubeupgrade.Kube
}

// seams connect the phase to Talos and Kubernetes; tests replace them.
type seams struct {
	dialTalos func(ctx context.Context, id *identity.Identity, cluster, endpoint string) (talosAPI, error)
	openKube  func(path string) (kubeAPI, error)
}

// The least a request is given, however small TALOSC_TIME_SCALE is: a
// Kubernetes or Talos call, and a Talos pull or installer run. (Under a
// test's time scale a hung call then costs seconds, not the real bound.)
const (
	minKubeTimeout        = 2 * time.Second
	minTalosTimeout       = 5 * time.Second
	minTalosStreamTimeout = 30 * time.Second
)

// defaultSeams are the real clients with the run's scaled timeouts.
func defaultSeams(env *phase.Env) seams {
	return seams{
		dialTalos: func(ctx context.Context, id *identity.Identity, cluster, endpoint string) (talosAPI, error) {
			return talosapi.Dial(ctx, id, cluster, endpoint, talosapi.Options{
				CallTimeout:       max(env.Scale(talosapi.DefaultCallTimeout), minTalosTimeout),
				PullTimeout:       max(env.Scale(talosapi.DefaultPullTimeout), minTalosStreamTimeout),
				InstallTimeout:    max(env.Scale(talosapi.DefaultInstallTimeout), minTalosStreamTimeout),
				RetryInterval:     env.Scale(talosapi.DefaultRetryInterval),
				MaxReconnectDelay: env.Scale(talosapi.DefaultMaxReconnectDelay),
			})
		},
		// A probe of an API that never answers takes three timeouts.
		openKube: func(path string) (kubeAPI, error) {
			return kube.Load(path, kube.Options{
				Timeout:       max(env.Scale(kube.DefaultTimeout), minKubeTimeout),
				RetryInterval: env.Scale(kube.DefaultRetryInterval),
			})
		},
	}
}
