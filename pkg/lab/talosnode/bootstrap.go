package talosnode

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	stdx509 "crypto/x509"
	"encoding/base64"
	"fmt"
	"time"

	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"

	"github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"gopkg.in/yaml.v3"
)

// Bootstrap bootstraps etcd on this control plane: "not available yet"
// until the node's services are up, AlreadyExists once its etcd has data
// (or restores it). With RecoverEtcd the etcd service restores the
// snapshot EtcdRecover uploaded, after the answer (see bootstrapRecover).
func (s *machineServer) Bootstrap(_ context.Context, in *machine.BootstrapRequest) (*machine.BootstrapResponse, error) {
	n := s.node
	f := n.fleet
	f.mu.Lock()
	if !n.servicesUp {
		f.mu.Unlock()
		return nil, status.Error(codes.FailedPrecondition, "bootstrap is not available yet")
	}
	f.mu.Unlock()
	mc, err := n.requireControlPlane("bootstrap")
	if err != nil {
		return nil, err
	}
	reply := &machine.BootstrapResponse{Messages: []*machine.Bootstrap{{}}}
	f.mu.Lock()
	if n.etcdData || n.restoring {
		f.mu.Unlock()
		return nil, status.Error(codes.AlreadyExists, "etcd data directory is not empty")
	}
	c := n.cluster
	if c.etcd.bootstrapped {
		// A second bootstrap makes a second etcd cluster: remember it so a
		// test can fail on it; this node joins nothing.
		c.doubleBootstrap = append(c.doubleBootstrap, n.hostname())
		n.etcdData = true
		f.mu.Unlock()
		return reply, nil
	}
	if in.GetRecoverEtcd() {
		restore := n.bootstrapRecover(mc, in.GetRecoverSkipHashCheck())
		f.mu.Unlock()
		n.changed(c)
		f.wg.Go(restore)
		return reply, nil
	}
	c.etcd.bootstrap(n)
	n.etcdData, n.restoreErr = true, nil
	c.joinWaiting(n)
	info := n.bootstrapInfo(mc)
	f.mu.Unlock()
	n.changed(c)
	if hook := f.opts.OnBootstrap; hook != nil {
		f.wg.Go(func() { hook(info) })
	}
	return reply, nil
}

// bootstrapInfo is what the lab needs to run the Kubernetes API of the
// cluster of n's configuration mc; f.mu held.
func (n *Node) bootstrapInfo(mc *machineConfig) BootstrapInfo {
	c := n.cluster
	info := BootstrapInfo{ClusterName: mc.clusterName, Endpoint: c.Endpoint(), Cluster: c, CertSANs: apiServerSANs(mc.provider)}
	if ca, _, err := mc.kubernetesCA(); err == nil {
		info.CACert, info.CAKey = ca.Crt, ca.Key
	}
	return info
}

// Kubeconfig streams an admin kubeconfig (.tar.gz holding one file named
// kubeconfig), with a fresh client certificate from the cluster's
// Kubernetes CA, for the cluster endpoint of the machine config.
func (s *machineServer) Kubeconfig(_ *emptypb.Empty, srv grpc.ServerStreamingServer[common.Data]) error {
	mc, err := s.node.requireControlPlane("kubeconfig")
	if err != nil {
		return err
	}
	kc, err := adminKubeconfig(mc)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "kubeconfig", Size: int64(len(kc)), ModTime: time.Now(), Mode: 0o600}); err != nil {
		return fmt.Errorf("kubeconfig archive: %w", err)
	}
	if _, err := tw.Write(kc); err != nil {
		return fmt.Errorf("kubeconfig archive: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("kubeconfig archive: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("kubeconfig archive: %w", err)
	}
	return srv.Send(&common.Data{Bytes: buf.Bytes()})
}

// kubeconfigDoc is a kubeconfig in the layout clientcmd.Write produces.
type kubeconfigDoc struct {
	APIVersion     string      `yaml:"apiVersion"`
	Clusters       []kcCluster `yaml:"clusters"`
	Contexts       []kcContext `yaml:"contexts"`
	CurrentContext string      `yaml:"current-context"`
	Kind           string      `yaml:"kind"`
	Preferences    struct{}    `yaml:"preferences"`
	Users          []kcUser    `yaml:"users"`
}

type kcCluster struct {
	Cluster struct {
		CAData string `yaml:"certificate-authority-data"`
		Server string `yaml:"server"`
	} `yaml:"cluster"`
	Name string `yaml:"name"`
}

type kcContext struct {
	Context struct {
		Cluster   string `yaml:"cluster"`
		Namespace string `yaml:"namespace"`
		User      string `yaml:"user"`
	} `yaml:"context"`
	Name string `yaml:"name"`
}

type kcUser struct {
	Name string `yaml:"name"`
	User struct {
		CertData string `yaml:"client-certificate-data"`
		KeyData  string `yaml:"client-key-data"`
	} `yaml:"user"`
}

// adminKubeconfig is what Talos's kubeconfig.GenerateAdmin writes.
func adminKubeconfig(mc *machineConfig) ([]byte, error) {
	issuing, accepted, err := mc.kubernetesCA()
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(issuing)
	if err != nil {
		return nil, fmt.Errorf("error getting Kubernetes CA: %w", err)
	}
	cn, org, life := "admin", "system:masters", 365*24*time.Hour
	if cl := mc.provider.Cluster(); cl != nil && cl.AdminKubeconfig() != nil {
		ak := cl.AdminKubeconfig()
		cn, org, life = ak.CommonName(), ak.CertOrganization(), ak.CertLifetime()
	}
	pair, err := x509.NewKeyPair(ca,
		x509.CommonName(cn), x509.Organization(org),
		x509.NotBefore(time.Now().Add(-10*time.Second)), x509.NotAfter(time.Now().Add(life)),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature|stdx509.KeyUsageKeyEncipherment),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}))
	if err != nil {
		return nil, fmt.Errorf("error generating Kubernetes client certificate: %w", err)
	}
	name, user := mc.clusterName, "admin@"+mc.clusterName
	var cl kcCluster
	cl.Name, cl.Cluster.Server = name, mc.endpoint.String()
	cl.Cluster.CAData = base64.StdEncoding.EncodeToString(bytes.Join(accepted, nil))
	var cx kcContext
	cx.Name = user
	cx.Context.Cluster, cx.Context.Namespace, cx.Context.User = name, "default", user
	var u kcUser
	u.Name = user
	u.User.CertData = base64.StdEncoding.EncodeToString(pair.CrtPEM)
	u.User.KeyData = base64.StdEncoding.EncodeToString(pair.KeyPEM)
	d := kubeconfigDoc{
		APIVersion: "v1", Kind: "Config", CurrentContext: user,
		Clusters: []kcCluster{cl}, Contexts: []kcContext{cx}, Users: []kcUser{u},
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&d); err != nil {
		return nil, fmt.Errorf("encode kubeconfig: %w", err)
	}
	return out.Bytes(), nil
}

// apiServerSANs are the kube-apiserver certificate SANs of a machine config.
func apiServerSANs(p talosconfig.Provider) []string {
	if api := p.K8sAPIServerConfig(); api != nil {
		return api.CertSANs()
	}
	return nil
}
