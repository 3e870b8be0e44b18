package phase

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/openstack"
	"github.com/talosc/talosc/pkg/releases"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// Environment variables the phases read.
const (
	// EnvImageFactory overrides the Image Factory base URL (the installer
	// images' registry host comes from it).
	EnvImageFactory = "TALOSC_IMAGE_FACTORY_URL"
	// EnvTimeScale multiplies every wait budget and polling interval (a
	// positive number; default 1). talosc-lab, whose machines boot in
	// seconds, suggests a small one so runs and tests do not sit in 15 s
	// polls.
	EnvTimeScale = "TALOSC_TIME_SCALE"
	// EnvKubeletRepository overrides where check reads the Kubernetes
	// releases from (the kubelet image repository's tags).
	EnvKubeletRepository = "TALOSC_KUBELET_REPOSITORY"
)

// Env is what a phase reads from its environment, resolved once per run.
type Env struct {
	lookup func(string) (string, bool)
	scale  float64

	once  sync.Once
	cloud provider.Cloud
	err   error
	// Connect opens the provider's API; nil means the provider for the
	// cluster's provider section (tests replace it).
	Connect func(ctx context.Context, cfg *config.Cluster, o openstack.Options) (provider.Cloud, error)
}

// NewEnv resolves the environment through lookup.
func NewEnv(lookup func(string) (string, bool)) (*Env, error) {
	e := &Env{lookup: lookup, scale: 1}
	if v, ok := lookup(EnvTimeScale); ok && v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive number such as 0.05", EnvTimeScale, v)
		}
		e.scale = f
	}
	return e, nil
}

// Scale returns d scaled by TALOSC_TIME_SCALE (at least a millisecond).
func (e *Env) Scale(d time.Duration) time.Duration {
	return max(time.Duration(float64(d)*e.scale), time.Millisecond)
}

// FactoryURL is the Image Factory base URL.
func (e *Env) FactoryURL() string {
	if v, ok := e.lookup(EnvImageFactory); ok && v != "" {
		return v
	}
	return factory.DefaultBaseURL
}

// KubeletRepository is the kubelet image repository check reads the
// Kubernetes releases from.
func (e *Env) KubeletRepository() string {
	if v, ok := e.lookup(EnvKubeletRepository); ok && v != "" {
		return v
	}
	return releases.DefaultKubeletRepository
}

// Factory returns an Image Factory client whose downloads report progress
// through progress (nil: silent).
func (e *Env) Factory(progress func(done, total int64)) (*factory.Client, error) {
	c, err := factory.New(e.FactoryURL(), factory.Options{Progress: progress})
	if err != nil {
		return nil, fmt.Errorf("image factory %s: %w", e.FactoryURL(), err)
	}
	return c, nil
}

// Cloud connects to the cluster's provider once per run.
func (e *Env) Cloud(ctx context.Context, in *Input) (provider.Cloud, error) {
	e.once.Do(func() {
		o := openstack.Options{
			Wait: e.Scale(openstack.DefaultWait),
			Poll: e.Scale(openstack.DefaultPoll),
			Logf: func(format string, args ...any) { in.Out.Warn(format, args...) },
		}
		connect := e.Connect
		if connect == nil {
			connect = connectProvider
		}
		e.cloud, e.err = connect(ctx, in.Config, o)
	})
	return e.cloud, e.err
}

// connectProvider opens the provider named by cluster.yaml.
func connectProvider(ctx context.Context, cfg *config.Cluster, o openstack.Options) (provider.Cloud, error) {
	if cfg.Provider() == config.ProviderOpenStack {
		c, err := openstack.Connect(ctx, cfg, o)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return nil, &provider.NotAvailableError{Provider: cfg.Provider(), Phase: "connect"}
}

// NewPlan returns the plan of one run: a dry run records without acting,
// and every change is announced on stderr as it starts.
func (in *Input) NewPlan() *provider.Plan {
	return &provider.Plan{
		DryRun: in.DryRun,
		Progress: func(c state.Change) {
			if !in.DryRun {
				in.Out.Action(false, "%s %s %s", c.Action, c.Kind, c.Name)
			}
		},
	}
}
