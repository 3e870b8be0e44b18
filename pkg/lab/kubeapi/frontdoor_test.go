package kubeapi

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// seen is what the fake apiserver behind the front door saw.
type seen struct {
	User, ProxyCN, Authorization string
	Groups                       []string
}

// TestFrontDoor_Identity checks the front door against a fake apiserver: a
// trusted client certificate becomes X-Remote-User/Group sent with the
// front-proxy certificate; tokens and anonymous calls pass through without
// it; nobody can claim an identity through headers; an untrusted certificate
// gets the apiserver's 401.
func TestFrontDoor_Identity(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{User: r.Header.Get(headerUser), Groups: r.Header.Values(headerGroup), Authorization: r.Header.Get("Authorization")}
		if len(r.TLS.PeerCertificates) > 0 {
			s.ProxyCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		_ = json.NewEncoder(w).Encode(s)
	}))
	upstream.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
	upstream.StartTLS()
	t.Cleanup(upstream.Close)

	ca, caKey := testCA(t)
	otherCA, otherKey := testCA(t)
	vip := netip.MustParseAddr("127.40.0.8")
	servingCert, servingKey, err := SignServingCert(ca, caKey, vip)
	if err != nil {
		t.Fatal(err)
	}
	pki, err := newFrontProxyPKI()
	if err != nil {
		t.Fatal(err)
	}
	proxyCert, _ := tls.X509KeyPair(pki.certPEM, pki.keyPEM)
	serving, _ := tls.X509KeyPair(servingCert, servingKey)
	clientCAs, _ := certPool(ca)
	backendCAs := x509.NewCertPool()
	backendCAs.AddCert(upstream.Certificate())
	rec := &labnet.Recorder{}
	fd := newFrontDoor(upstream.Listener.Addr().String(), clientCAs, backendCAs, proxyCert, rec, nil)
	ln, err := labnet.Listen(t.Context(), vip.String()+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := fd.server(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &serving, nil }, nil)
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { srv.Close(); fd.closeTransports() })

	adminCert, adminKey, _ := SignClientCert(ca, caKey, "admin", "system:masters")
	strangerCert, strangerKey, _ := SignClientCert(otherCA, otherKey, "admin", "system:masters")
	client := func(certPEM, keyPEM []byte) *http.Client {
		cfg := &tls.Config{RootCAs: clientCAs, MinVersion: tls.VersionTLS12}
		if certPEM != nil {
			c, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{c}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
	}
	url := "https://" + ln.Addr().String() + "/api/v1/nodes"
	// The recorder is checked once every (parallel) request is done.
	t.Cleanup(func() { checkRecorded(t, rec) })
	checkIdentities(t, url, client, adminCert, adminKey, strangerCert, strangerKey)
}

func checkRecorded(t *testing.T, rec *labnet.Recorder) {
	t.Helper()
	calls := rec.Calls()
	if len(calls) != 5 {
		t.Fatalf("recorded %d calls, want 5: %+v", len(calls), calls)
	}
	statuses := map[int]int{}
	for _, c := range calls {
		if c.Service != Service || c.Method != http.MethodGet || c.Path != "/api/v1/nodes" {
			t.Errorf("recorded %+v, want service %s GET /api/v1/nodes", c, Service)
		}
		statuses[c.Status]++
	}
	if d := cmp.Diff(map[int]int{200: 4, 401: 1}, statuses); d != "" {
		t.Errorf("recorded statuses (-want +got):\n%s", d)
	}
}

func checkIdentities(t *testing.T, url string, client func(certPEM, keyPEM []byte) *http.Client, adminCert, adminKey, strangerCert, strangerKey []byte) {
	t.Helper()
	for name, tc := range map[string]struct {
		client     *http.Client
		header     http.Header
		wantStatus int
		want       seen
	}{
		"client certificate": {
			client: client(adminCert, adminKey), header: http.Header{"X-Remote-User": {"mallory"}},
			wantStatus: http.StatusOK, want: seen{User: "admin", Groups: []string{"system:masters"}, ProxyCN: FrontProxyUser},
		},
		"token": {
			client: client(nil, nil), header: http.Header{"Authorization": {"Bearer t0k3n"}, "X-Remote-User": {"mallory"}, "X-Remote-Extra-Scopes": {"x"}},
			wantStatus: http.StatusOK, want: seen{Authorization: "Bearer t0k3n"},
		},
		"anonymous": {client: client(nil, nil), wantStatus: http.StatusOK},
		"untrusted certificate": {
			client: client(strangerCert, strangerKey), wantStatus: http.StatusUnauthorized,
		},
		"untrusted certificate and a token": {
			client: client(strangerCert, strangerKey), header: http.Header{"Authorization": {"Bearer t0k3n"}},
			wantStatus: http.StatusOK, want: seen{Authorization: "Bearer t0k3n"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
			maps.Copy(req.Header, tc.header)
			resp, err := tc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tc.wantStatus, body)
			}
			if resp.StatusCode == http.StatusUnauthorized {
				var st struct{ Kind, Reason string }
				if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || st.Reason != "Unauthorized" {
					t.Errorf("401 body = %s, want a v1 Status with reason Unauthorized", body)
				}
				return
			}
			var got seen
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("the apiserver saw (-want +got):\n%s", d)
			}
			if resp.ProtoMajor != 2 {
				t.Errorf("protocol = %s, want HTTP/2 (as client-go negotiates with the apiserver)", resp.Proto)
			}
		})
	}
}
