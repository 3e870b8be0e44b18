package openstack_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/config"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/openstack"
)

func TestPasswordAuthAndCatalog(t *testing.T) {
	t.Parallel()
	lab := start(t, openstack.Config{})
	pc := login(t, lab, "demo", "demo")
	c := newClients(t, pc)
	for name, sc := range map[string]*gophercloud.ServiceClient{"compute": c.compute, "network": c.network, "image": c.image, "volume": c.volume} {
		if !strings.HasPrefix(sc.Endpoint, lab.URL) {
			t.Errorf("%s endpoint %s is not the lab's", name, sc.Endpoint)
		}
	}
	demo, _ := lab.Project("demo")
	if want := lab.URL + openstack.VolumePrefix + "/v3/" + demo.ID + "/"; c.volume.Endpoint != want {
		t.Errorf("volume endpoint %s, want %s", c.volume.Endpoint, want)
	}
	if _, err := flavors.ListDetail(c.compute, nil).AllPages(t.Context()); err != nil {
		t.Fatal(err)
	}
	res := pc.GetAuthResult().(tokens.CreateResult)
	project, err := res.ExtractProject()
	if err != nil || project.Name != "demo" {
		t.Fatalf("token project %+v, %v", project, err)
	}
	_, err = gos.AuthenticatedClient(t.Context(), gophercloud.AuthOptions{IdentityEndpoint: lab.AuthURL(), Username: "demo", Password: "wrong", DomainName: "Default"})
	wantCode(t, err, http.StatusUnauthorized, "requires authentication")
}

func TestEveryCallNeedsAValidToken(t *testing.T) {
	t.Parallel()
	lab := start(t, openstack.Config{})
	for _, path := range []string{"/compute/v2.1/servers", "/network/v2.0/networks", "/image/v2/images", "/volume/v3/x/volumes", "/identity/v3/auth/catalog"} {
		for _, tok := range []string{"", "gAAAAAbogus"} {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, lab.URL+path, http.NoBody)
			req.Header.Set("X-Auth-Token", tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "Keystone uri=") {
				t.Errorf("GET %s with token %q: %d %v", path, tok, resp.StatusCode, resp.Header)
			}
		}
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, lab.URL+"/network/", http.NoBody) // version discovery needs no token
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("version discovery: %d", resp.StatusCode)
	}
}

func TestApplicationCredentials(t *testing.T) {
	t.Parallel()
	lab := start(t, openstack.Config{})
	pc := login(t, lab, "demo", "demo")
	identity, err := gos.NewIdentityV3(pc, gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatal(err)
	}
	user, err := pc.GetAuthResult().(tokens.CreateResult).ExtractUser()
	if err != nil {
		t.Fatal(err)
	}
	ac, err := applicationcredentials.Create(t.Context(), identity, user.ID, applicationcredentials.CreateOpts{Name: "talosc"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	_, err = applicationcredentials.Create(t.Context(), identity, user.ID, applicationcredentials.CreateOpts{Name: "talosc"}).Extract()
	wantCode(t, err, http.StatusConflict, "Duplicate entry")

	acPC, err := config.NewProviderClient(t.Context(), gophercloud.AuthOptions{IdentityEndpoint: lab.AuthURL(), ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: ac.Secret})
	if err != nil {
		t.Fatal(err)
	}
	project, err := acPC.GetAuthResult().(tokens.CreateResult).ExtractProject()
	if err != nil || project.Name != "demo" {
		t.Fatalf("app credential token project %+v, %v", project, err)
	}
	net, err := gos.NewNetworkV2(acPC, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := networks.List(net, nil).AllPages(t.Context()); err != nil {
		t.Fatal(err)
	}

	// The lab command mints one and writes clouds.yaml; gophercloud's
	// clouds package reads it.
	minted, err := lab.CreateApplicationCredential("demo", "lab")
	if err != nil {
		t.Fatal(err)
	}
	ao, eo, _, err := clouds.Parse(clouds.WithCloudsYAML(bytes.NewReader(lab.CloudsYAML(minted))), clouds.WithCloudName("oslab-appcred-lab"))
	if err != nil {
		t.Fatal(err)
	}
	yamlPC, err := config.NewProviderClient(t.Context(), ao)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gos.NewComputeV2(yamlPC, eo); err != nil {
		t.Fatal(err)
	}
}

func TestExpiredTokenIsRenewed(t *testing.T) {
	t.Parallel()
	// Long enough for the renewed token to outlive its retry on a busy
	// machine; the first one is slept past.
	lab := start(t, openstack.Config{TokenTTL: 500 * time.Millisecond})
	c := newClients(t, login(t, lab, "admin", "admin"))
	time.Sleep(600 * time.Millisecond)
	if _, err := networks.List(c.network, nil).AllPages(t.Context()); err != nil {
		t.Fatalf("gophercloud should re-authenticate after a 401: %v", err)
	}
	calls := lab.Recorder().Counts(func(c labnet.Call) string { return c.Service + " " + c.Method + " " + c.Path })
	if calls["keystone POST /v3/auth/tokens"] != 2 || calls["neutron GET /v2.0/networks"] != 2 {
		t.Errorf("calls %v", calls)
	}
}
