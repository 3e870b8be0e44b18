package provider_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// A binary connects only to the providers it links: another provider is
// not available in its build (a plan defers on it), and a linked one gets
// the run's time scale, its request timeouts floored at ten seconds.
func TestConnectorsConnect(t *testing.T) {
	t.Parallel()
	var got provider.ConnectOptions
	cs := provider.Connectors{config.ProviderOpenStack: func(_ context.Context, _ *config.Cluster, o provider.ConnectOptions) (provider.Cloud, error) {
		got = o
		return nil, nil
	}}
	half := func(d time.Duration) time.Duration { return d / 2 }

	_, err := cs.Connect(t.Context(), &config.Cluster{Proxmox: &config.Proxmox{}}, provider.ConnectOptions{TimeScale: half})
	if !errors.Is(err, provider.ErrNotAvailable) {
		t.Errorf("Connect(proxmox) with only openstack linked = %v, want ErrNotAvailable", err)
	}
	if _, err := cs.Connect(t.Context(), &config.Cluster{OpenStack: &config.OpenStack{}}, provider.ConnectOptions{TimeScale: half}); err != nil {
		t.Fatalf("Connect(openstack) = %v", err)
	}
	if d := got.Scale(time.Minute); d != 30*time.Second {
		t.Errorf("Scale(1m) = %s, want the run's scale, 30s", d)
	}
	if d := got.RequestTimeout(time.Second); d != 10*time.Second {
		t.Errorf("RequestTimeout(1s) = %s, want the 10s floor", d)
	}
	if d := (provider.ConnectOptions{}).Scale(time.Minute); d != time.Minute {
		t.Errorf("Scale without a time scale = %s, want 1m", d)
	}
}
