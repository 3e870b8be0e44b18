// Package live is how a phase reads the running cluster, so the whole-run
// validation (preflight) and the nodes phase read it the same way: the
// Kubernetes client of the cluster directory's kubeconfig and the Talos
// session through one real endpoint, each opened with the run's scaled
// bounds (OpenKube, DialTalos); the reference's probe of the Kubernetes
// API (Probe, I-3); and a node's Talos version, given a reboot's time to
// answer (Version, I-V1).
package live

import (
	"context"
	"os"
	"time"

	"github.com/cosi-project/runtime/pkg/state"
	"k8s.io/client-go/rest"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// KubeReader is what reading the cluster asks of Kubernetes.
type KubeReader interface {
	Probe(ctx context.Context, attempts int, interval time.Duration) (bool, error)
	ServerVersion(ctx context.Context) (string, error)
	Nodes(ctx context.Context) ([]kube.Node, error)
}

// Kube is what the phases ask of Kubernetes; *kube.Client satisfies it.
type Kube interface {
	KubeReader
	WaitReady(ctx context.Context, names []string, budget, poll time.Duration, progress func(ready, total int)) ([]kube.Node, error)
	Drain(ctx context.Context, node string, o kube.DrainOptions) error
	Uncordon(ctx context.Context, node string) error
	DeleteNode(ctx context.Context, node string) error
	StaticPods(ctx context.Context, component string) ([]kube.StaticPod, error)
	Apply(ctx context.Context, obj map[string]any, fieldManager string) error
	// RESTConfig is the client's configuration (go-kubernetes' upgrade
	// checks list removed API resources with it).
	RESTConfig() *rest.Config
}

// TalosReader is what reading the cluster asks of Talos.
type TalosReader interface {
	WaitReachable(ctx context.Context, node string, budget, poll time.Duration, progress func(time.Duration)) error
	Version(ctx context.Context, node string) (string, error)
}

// Talos is what the phases ask of Talos, through one endpoint (a real
// control plane) on behalf of any node; *talosapi.Client satisfies it.
type Talos interface {
	TalosReader
	MachineConfig(ctx context.Context, node string) ([]byte, error)
	ApplyConfiguration(ctx context.Context, node string, data []byte, dryRun bool) (talosapi.ApplyResult, error)
	WaitRebooted(ctx context.Context, node, previous string, budget, poll time.Duration, progress func(time.Duration)) error
	Bootstrap(ctx context.Context, node string, budget time.Duration) error
	Kubeconfig(ctx context.Context, node string) ([]byte, error)
	EtcdMembers(ctx context.Context, node string) ([]talosapi.Member, error)
	EtcdState(ctx context.Context, node string) (talosapi.EtcdState, error)
	EtcdRemoveMember(ctx context.Context, node string, id uint64) error
	EtcdForfeitLeadership(ctx context.Context, node string) error
	EtcdSnapshot(ctx context.Context, node string, f *os.File) (int64, error)
	EtcdStatus(ctx context.Context, node string) (talosapi.EtcdStatus, error)
	Reset(ctx context.Context, node string, o talosapi.ResetOptions) error
	Health(ctx context.Context, o talosapi.HealthOptions) error
	Schematic(ctx context.Context, node string) (string, error)
	Upgrade(ctx context.Context, node, installer string, progress func(string)) error
	Reboot(ctx context.Context, node string) (previousBootID string, err error)
	BootID(ctx context.Context, node string) (string, error)
	Close() error
	PullImage(ctx context.Context, node, ref string, system bool) error
	ConfigVersion(ctx context.Context, node, component string) (uint64, error)
	Manifests(ctx context.Context, node string) ([]map[string]any, error)
	// COSI is the session's resource state (go-kubernetes' upgrade checks
	// read each node's through it).
	COSI() state.State
}

// TalosDialer opens a Talos session through endpoint, authenticated by id
// for cluster; tests replace it.
type TalosDialer func(ctx context.Context, id *identity.Identity, cluster, endpoint string) (Talos, error)

// KubeOpener opens the Kubernetes client of the kubeconfig at path; tests
// replace it.
type KubeOpener func(path string) (Kube, error)

// The least a request is given, however small TALOSC_TIME_SCALE is: a
// Kubernetes or Talos call, and a Talos pull or installer run. (Under a
// test's time scale a hung call then costs seconds, not the real bound.)
const (
	minKubeTimeout        = 2 * time.Second
	minTalosTimeout       = 5 * time.Second
	minTalosStreamTimeout = 30 * time.Second
)

// DialTalos is the real Talos dial, its bounds scaled by env.
func DialTalos(env *phase.Env) TalosDialer {
	return func(ctx context.Context, id *identity.Identity, cluster, endpoint string) (Talos, error) {
		return talosapi.Dial(ctx, id, cluster, endpoint, talosapi.Options{
			CallTimeout:       max(env.Scale(talosapi.DefaultCallTimeout), minTalosTimeout),
			PullTimeout:       max(env.Scale(talosapi.DefaultPullTimeout), minTalosStreamTimeout),
			InstallTimeout:    max(env.Scale(talosapi.DefaultInstallTimeout), minTalosStreamTimeout),
			RetryInterval:     env.Scale(talosapi.DefaultRetryInterval),
			MaxReconnectDelay: env.Scale(talosapi.DefaultMaxReconnectDelay),
		})
	}
}

// OpenKube is the real Kubernetes client, each request bounded by
// kubectl's 10 s (I-X1) scaled by env. A probe of an API that never
// answers takes three of them.
func OpenKube(env *phase.Env) KubeOpener {
	return func(path string) (Kube, error) {
		return kube.Load(path, kube.Options{
			Timeout:       max(env.Scale(kube.DefaultTimeout), minKubeTimeout),
			RetryInterval: env.Scale(kube.DefaultRetryInterval),
		})
	}
}
