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
	"github.com/talosc/talosc/pkg/provider/proxmox"
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

// Cloud connects to the cluster's provider once per run, with the run's
// scaled waits; the provider's warnings go to stderr.
func (e *Env) Cloud(ctx context.Context, in *Input) (provider.Cloud, error) {
	e.once.Do(func() {
		logf := func(format string, args ...any) { in.Out.Warn(format, args...) }
		switch in.Config.Provider() {
		case config.ProviderOpenStack:
			e.cloud, e.err = openstack.Connect(ctx, in.Config, openstack.Options{
				Wait: e.Scale(openstack.DefaultWait), Poll: e.Scale(openstack.DefaultPoll), Logf: logf,
			})
		case config.ProviderProxmox:
			e.cloud, e.err = proxmox.Connect(ctx, in.Config, proxmox.Options{
				Wait: e.Scale(proxmox.DefaultWait), Poll: e.Scale(proxmox.DefaultPoll),
				TaskTimeout: max(e.Scale(proxmox.DefaultTaskTimeout), time.Minute), Logf: logf,
			})
		default:
			e.err = &provider.NotAvailableError{Provider: in.Config.Provider(), Phase: "connect"}
		}
	})
	return e.cloud, e.err
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
