package openstack_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/talosc/talosc/pkg/lab/openstack"
)

// start runs a lab OpenStack for one test; unhandled routes fail the test.
func start(t *testing.T, cfg openstack.Config) *openstack.Cloud {
	t.Helper()
	if cfg.OnUnhandled == nil {
		cfg.OnUnhandled = func(service, method, path string) {
			t.Errorf("unhandled %s %s %s", service, method, path)
		}
	}
	lab, err := openstack.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.Close() })
	return lab
}

// login authenticates with a password as user (project = user's project).
func login(tb testing.TB, lab *openstack.Cloud, user, project string) *gophercloud.ProviderClient {
	tb.Helper()
	pc, err := gos.AuthenticatedClient(tb.Context(), gophercloud.AuthOptions{
		IdentityEndpoint: lab.AuthURL(), Username: user, Password: openstack.DefaultPassword, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: project, DomainName: "Default"}, AllowReauth: true,
	})
	if err != nil {
		tb.Fatalf("login %s: %v", user, err)
	}
	return pc
}

// clients are the service clients talosc uses, compute at microversion 2.52.
type clients struct {
	compute, network, image, volume *gophercloud.ServiceClient
}

func newClients(t *testing.T, pc *gophercloud.ProviderClient) clients {
	t.Helper()
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	var c clients
	var err error
	for _, step := range []func() error{
		func() error { c.compute, err = gos.NewComputeV2(pc, eo); return err },
		func() error { c.network, err = gos.NewNetworkV2(pc, eo); return err },
		func() error { c.image, err = gos.NewImageV2(pc, eo); return err },
		func() error { c.volume, err = gos.NewBlockStorageV3(pc, eo); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	c.compute.Microversion = "2.52"
	return c
}

// wantCode fails unless err is an HTTP error with code whose body contains
// every fragment.
func wantCode(t *testing.T, err error, code int, fragments ...string) {
	t.Helper()
	var ue gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ue) {
		t.Fatalf("want HTTP %d, got %v", code, err)
	}
	if ue.Actual != code {
		t.Fatalf("want HTTP %d, got %d: %s", code, ue.Actual, ue.Body)
	}
	for _, f := range fragments {
		if !strings.Contains(string(ue.Body), f) {
			t.Errorf("HTTP %d body %s lacks %q", code, ue.Body, f)
		}
	}
}

// eventually polls f every millisecond until it reports true or 5 s pass.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for !f() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}
