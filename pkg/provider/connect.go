package provider

import (
	"context"
	"time"

	"github.com/talosc/talosc/pkg/config"
)

// Connector connects to one provider's cloud for cfg. Each binary that
// reaches a cloud hands the runner the connectors it links (see
// pkg/provider/clouds), so a binary that does not ask for a provider
// links none of its SDK.
type Connector func(ctx context.Context, cfg *config.Cluster, o ConnectOptions) (Cloud, error)

// Connectors are the providers a binary links, by provider name
// (config.ProviderOpenStack, config.ProviderProxmox).
type Connectors map[string]Connector

// Connect connects to cfg's provider with the connector linked for it; a
// provider the binary does not link is a NotAvailableError.
func (cs Connectors) Connect(ctx context.Context, cfg *config.Cluster, o ConnectOptions) (Cloud, error) {
	connect, ok := cs[cfg.Provider()]
	if !ok {
		return nil, &NotAvailableError{Provider: cfg.Provider(), Phase: "connect"}
	}
	return connect(ctx, cfg, o)
}

// minRequestTimeout is the least a scaled cloud request timeout becomes:
// under a test's time scale a request that hangs costs this, not a minute.
const minRequestTimeout = 10 * time.Second

// ConnectOptions is what a run hands every provider's connection.
type ConnectOptions struct {
	// TimeScale scales a wait budget or poll interval by the run's
	// TALOSC_TIME_SCALE (phase.Env.Scale); nil leaves durations as they are.
	TimeScale func(time.Duration) time.Duration
	// Logf receives the provider's warnings.
	Logf func(format string, args ...any)
}

// Scale returns d scaled by the run's time scale.
func (o ConnectOptions) Scale(d time.Duration) time.Duration {
	if o.TimeScale == nil {
		return d
	}
	return o.TimeScale(d)
}

// RequestTimeout returns the request timeout d scaled, but never below
// ten seconds.
func (o ConnectOptions) RequestTimeout(d time.Duration) time.Duration {
	return max(o.Scale(d), minRequestTimeout)
}
