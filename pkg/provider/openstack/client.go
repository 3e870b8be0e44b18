// Package openstack is talosc's OpenStack provider (reference §5.2): the
// shared boot image in Glance, the cluster network, security group, router,
// reserved VIP ports and floating IPs in Neutron, and the machines in Nova
// (boot from a Cinder volume), all found by ownership tags and
// deterministic names. It implements provider.Cloud through gophercloud v2.
package openstack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// Ownership tags (reference §5.1): every resource talosc creates carries
// TagManagedBy and the cluster tag; node resources add role and pool.
const (
	TagManagedBy       = "managed-by=taloscluster"
	TagLegacyManagedBy = "managed-by=clusterctl"
)

// ClusterTag is the tag naming the cluster a resource belongs to.
func ClusterTag(cluster string) string { return "cluster=" + cluster }

// RoleTag and PoolTag are the node resources' role and pool tags.
func RoleTag(role string) string { return "role=" + role }

// PoolTag is the node resources' pool tag.
func PoolTag(pool string) string { return "pool=" + pool }

// ProjectTag is the tag naming the project a Nova server was made in
// (servers made by an older talosc carry none).
func ProjectTag(project string) string { return "project=" + project }

// ClusterTags are the tags of every resource of cluster.
func ClusterTags(cluster string) []string { return []string{TagManagedBy, ClusterTag(cluster)} }

// NodeTags are the tags of a machine's resources (port, server).
func NodeTags(m config.Machine, cluster string) []string {
	return append(ClusterTags(cluster), RoleTag(m.Role), PoolTag(m.Pool))
}

// Owned reports whether tags carry the ownership markers of cluster (the
// legacy managed-by marker is accepted on discovery).
func Owned(tags []string, cluster string) bool {
	var managed, ours bool
	for _, t := range tags {
		switch t {
		case TagManagedBy, TagLegacyManagedBy:
			managed = true
		case ClusterTag(cluster):
			ours = true
		}
	}
	return managed && ours
}

// ownedIn reports tags carrying the ownership markers of cluster and no
// project tag but project's.
func ownedIn(tags []string, cluster, project string) bool {
	return Owned(tags, cluster) && !slices.ContainsFunc(tags, func(t string) bool {
		return strings.HasPrefix(t, ProjectTag("")) && t != ProjectTag(project)
	})
}

// Compute microversions talosc needs: 2.52 for tags on create and tag
// filters.
const computeMicroversion = "2.52"

// Defaults for Options.
const (
	DefaultRequestTimeout = 60 * time.Second
	// DefaultUploadTimeout bounds a boot image upload.
	DefaultUploadTimeout = 30 * time.Minute
	// DefaultWait bounds a wait for a resource to reach a state (server
	// ACTIVE, volume gone): the reference's 900 s.
	DefaultWait = 15 * time.Minute
	// DefaultPoll is the interval between status reads while waiting.
	DefaultPoll = 2 * time.Second
)

// Options tune a Cloud; the zero value is the reference's budgets.
type Options struct {
	// RequestTimeout bounds every API request (0: DefaultRequestTimeout).
	RequestTimeout time.Duration
	// UploadTimeout bounds a boot image upload (0: DefaultUploadTimeout).
	UploadTimeout time.Duration
	// Wait bounds every wait for a status (0: DefaultWait).
	Wait time.Duration
	// Poll is the status polling interval (0: DefaultPoll).
	Poll time.Duration
	// Retries is how many times a request failing with a transient error
	// is retried (0: 4; negative: never).
	Retries int
	// HTTPClient's transport sends the requests; nil means a clone of
	// http.DefaultTransport.
	HTTPClient *http.Client
	// Logf receives warnings and progress; nil discards them.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.UploadTimeout <= 0 {
		o.UploadTimeout = DefaultUploadTimeout
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Retries == 0 {
		o.Retries = 4
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Cloud is an authenticated OpenStack session for one cluster's region. It
// is safe for concurrent use.
type Cloud struct {
	opts Options
	// cluster is the configuration the Cloud was opened for: every call
	// acts on its resources only.
	cluster *config.Cluster
	url     string
	region  string
	project string // the credential's project's name
	// projectID is the id of the credential's project: everything talosc
	// makes belongs to it, and nothing of another project is ever adopted,
	// changed or deleted, whatever the credential's role (I-F6).
	projectID string
	compute   *gophercloud.ServiceClient
	network   *gophercloud.ServiceClient
	image     *gophercloud.ServiceClient
	volume    *gophercloud.ServiceClient
	// session is the authenticated provider client the services share;
	// the object store is opened from it only when backup.swift asks.
	session *gophercloud.ProviderClient
	// twins are the unused second servers of a name the inventory found
	// (server_twins.go).
	twins serverTwins
}

var _ provider.Cloud = (*Cloud)(nil)

// Connector is the OpenStack provider.Connector: Connect with the
// default budgets scaled by the run.
func Connector(ctx context.Context, cfg *config.Cluster, o provider.ConnectOptions) (provider.Cloud, error) {
	c, err := Connect(ctx, cfg, Options{
		Wait: o.Scale(DefaultWait), Poll: o.Scale(DefaultPoll), Logf: o.Logf,
		RequestTimeout: o.RequestTimeout(DefaultRequestTimeout),
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Connect authenticates with cfg.OpenStack's application credential and
// opens the compute, network, image and block-storage services of its
// region. Credentials never appear in errors.
func Connect(ctx context.Context, cfg *config.Cluster, o Options) (*Cloud, error) {
	os := cfg.OpenStack
	if os == nil {
		return nil, errors.New("openstack: cluster.yaml has no openstack section")
	}
	if os.CredentialID == "" || os.CredentialSecret == "" {
		return nil, errors.New("openstack: openstack.credential_id and openstack.credential_secret must be set (normally in secrets.yaml)")
	}
	o = o.withDefaults()
	pc, err := gos.NewClient(os.URL)
	if err != nil {
		return nil, fmt.Errorf("openstack: openstack.url %q: %w", os.URL, err)
	}
	pc.HTTPClient = newHTTPClient(o, os.AllowHTTP)
	pc.UserAgent.Prepend("talosc")
	ctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
	defer cancel()
	err = gos.Authenticate(ctx, pc, gophercloud.AuthOptions{
		IdentityEndpoint:            os.URL,
		ApplicationCredentialID:     string(os.CredentialID),
		ApplicationCredentialSecret: string(os.CredentialSecret),
		AllowReauth:                 true,
	})
	if _, untrusted := errors.AsType[*tls.CertificateVerificationError](err); untrusted {
		return nil, fmt.Errorf("openstack: authenticate at %s: the server's certificate is not trusted, so the application credential was not sent: %w; "+
			"openstack.url must present a certificate from a CA this machine trusts: add that CA to the system trust store, or point SSL_CERT_FILE at a bundle holding it", os.URL, err)
	}
	if err != nil {
		return nil, fmt.Errorf("openstack: authenticate at %s with the application credential (openstack.credential_id): %w", os.URL, err)
	}
	c := &Cloud{opts: o, cluster: cfg, url: os.URL, region: os.Region, session: pc}
	if r, ok := pc.GetAuthResult().(tokens.CreateResult); ok {
		if p, err := r.ExtractProject(); err == nil && p != nil {
			c.project, c.projectID = p.Name, p.ID
		}
	}
	if c.projectID == "" {
		return nil, errors.New("openstack: the application credential's token names no project, so nothing can be proven talosc's: use a project-scoped application credential (openstack.credential_id)")
	}
	eo := gophercloud.EndpointOpts{Region: os.Region}
	services := []struct {
		name string
		dst  **gophercloud.ServiceClient
		open func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error)
	}{
		{"compute (nova)", &c.compute, gos.NewComputeV2},
		{"network (neutron)", &c.network, gos.NewNetworkV2},
		{"image (glance)", &c.image, gos.NewImageV2},
		{"block-storage (cinder)", &c.volume, gos.NewBlockStorageV3},
	}
	for _, s := range services {
		sc, err := s.open(pc, eo)
		if plain, ok := errors.AsType[*plainHTTPError](err); ok {
			return nil, fmt.Errorf("openstack: the %s endpoint in the catalog at %s: %w", s.name, os.URL, plain)
		}
		if err != nil {
			return nil, fmt.Errorf("openstack: no %s service in region %q of the catalog at %s: %w", s.name, os.Region, os.URL, err)
		}
		*s.dst = sc
	}
	c.compute.Microversion = computeMicroversion
	return c, nil
}

// Project is the application credential's project name.
func (c *Cloud) Project() string { return c.project }

// MachineKind is KindServer.
func (c *Cloud) MachineKind() string { return KindServer }

// newHTTPClient bounds every request attempt by o.RequestTimeout and
// retries transient failures (see provider.RetryTransport); unless
// allowHTTP, it refuses every plain http request before sending it (see
// httpsOnly).
func newHTTPClient(o Options, allowHTTP bool) http.Client {
	var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone() //nolint:forcetypeassert // the stdlib's default transport
	if o.HTTPClient != nil && o.HTTPClient.Transport != nil {
		rt = o.HTTPClient.Transport
	}
	rt = closeWhenAsked{next: rt}
	rt = &provider.RetryTransport{
		Next: rt, Retries: max(o.Retries, 0), Timeout: o.RequestTimeout, UploadTimeout: o.UploadTimeout, Logf: o.Logf, Name: "openstack",
		RetryInternalErrors: true, Replayable: replayable,
	}
	if !allowHTTP {
		rt = httpsOnly{next: rt}
	}
	return http.Client{Transport: rt}
}

// closeWhenAsked gives a request that says "Connection: close" its own
// connection, closed after the answer (req.Close): Go's transport reads
// only req.Close, and gophercloud sets only headers (the Swift target's
// MoreHeaders, NewSwiftTarget).
type closeWhenAsked struct{ next http.RoundTripper }

func (t closeWhenAsked) RoundTrip(req *http.Request) (*http.Response, error) {
	if !req.Close && strings.EqualFold(req.Header.Get("Connection"), "close") {
		req = req.Clone(req.Context())
		req.Close = true
	}
	return t.next.RoundTrip(req)
}

// wrap names the operation and resource in an error from gophercloud.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
}

// isNotFound reports a 404 from any service.
func isNotFound(err error) bool {
	return gophercloud.ResponseCodeIs(err, http.StatusNotFound)
}

// isConflict reports a 409 from any service.
func isConflict(err error) bool {
	return gophercloud.ResponseCodeIs(err, http.StatusConflict)
}
