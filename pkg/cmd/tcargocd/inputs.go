package tcargocd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/rancherapi"
	"github.com/talosc/talosc/pkg/state"
)

// access is this cluster's API as the cluster Secret hands it to Argo CD.
type access struct {
	// server is the API URL, trailing "/" trimmed (Argo CD trims it too).
	server string
	// config is the Secret's config JSON; it holds the client key.
	config string
}

// tlsClientConfig is Argo CD's cluster TLS configuration: caData, certData
// and keyData are []byte in Argo CD (A@v3.5.1 types.go:2543-2559), so
// encoding/json writes them as base64 of the PEM, the same bytes a
// kubeconfig's *-data fields hold.
type tlsClientConfig struct {
	Insecure bool   `json:"insecure"`
	CAData   []byte `json:"caData,omitempty"`
	CertData []byte `json:"certData,omitempty"`
	KeyData  []byte `json:"keyData,omitempty"`
}

type clusterConfig struct {
	BearerToken     string          `json:"bearerToken,omitempty"`
	TLSClientConfig tlsClientConfig `json:"tlsClientConfig"`
}

// readAccess reads the cluster's kubeconfig at path (its current context).
// Errors name the file and what it lacks, never its key material.
func readAccess(path string) (access, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return access{}, fmt.Errorf("the cluster's kubeconfig %s: %w", path, err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return access{}, fmt.Errorf("the cluster's kubeconfig %s: no current context", path)
	}
	cl, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cl == nil || user == nil || cl.Server == "" {
		return access{}, fmt.Errorf("the cluster's kubeconfig %s: its current context %q names no cluster server or user", path, cfg.CurrentContext)
	}
	cc := clusterConfig{BearerToken: user.Token, TLSClientConfig: tlsClientConfig{
		CAData: cl.CertificateAuthorityData, CertData: user.ClientCertificateData, KeyData: user.ClientKeyData,
	}}
	if len(cc.TLSClientConfig.CAData) == 0 || (len(cc.TLSClientConfig.CertData) == 0 || len(cc.TLSClientConfig.KeyData) == 0) && cc.BearerToken == "" {
		return access{}, fmt.Errorf("the cluster's kubeconfig %s: the cluster Secret needs inline certificate-authority-data and client-certificate-data/client-key-data (or a token), as talosctl kubeconfig writes them", path)
	}
	b, err := json.Marshal(cc)
	if err != nil {
		return access{}, fmt.Errorf("the cluster Secret's config: %w", err)
	}
	return access{server: strings.TrimSuffix(cl.Server, "/"), config: string(b)}, nil
}

// rancherID is the Rancher cluster id to stamp (AR-7) and where it came
// from: the rancher plugin's published result when the state document
// holds one (its cluster_id, which may say "none"), else the downstream
// cluster's own agent as plugins.md §2.7 ranks it. An unreadable agent is an
// error, never "no id".
func rancherID(ctx context.Context, doc *state.Document, k *kube.Client) (id, source string, err error) {
	if doc != nil {
		sec, ok, err := doc.Section("rancher")
		if err != nil {
			return "", "", err
		}
		var out map[string]any
		if ok && len(sec.Outputs) > 0 && json.Unmarshal(sec.Outputs, &out) == nil {
			if v, has := out["cluster_id"]; has {
				id, _ := v.(string)
				return id, "the rancher plugin's result", nil
			}
		}
	}
	a, err := rancherapi.ReadAgent(ctx, k)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("reading the Rancher agent downstream: %w", err)
	case !a.Installed:
		return "", "no Rancher agent downstream", nil
	case a.ClusterID == "":
		return "", "the Rancher agent downstream is not registered yet (its credentials carry no cluster id)", nil
	}
	return a.ClusterID, "the Rancher agent downstream", nil
}

// ingressOf reads the addresses of AR-4: on OpenStack from the net phase's
// outputs in doc, on Proxmox from network.external.ingress_pool (the net
// phase reports only its first address).
func ingressOf(cfg *config.Cluster, doc *state.Document) (ingress, error) {
	if cfg.Provider() == config.ProviderProxmox {
		in := ingress{known: true, addresses: []string{}}
		if ext := cfg.Network.External; ext != nil && ext.IngressPool.IsValid() {
			in.addresses = []string{ext.IngressPool.String()}
		}
		return in, nil
	}
	net, ok, err := sections.ReadNetwork(doc)
	if err != nil || !ok {
		return ingress{}, err
	}
	return ingressFromNet(net.NetworkResult), nil
}

func ingressFromNet(res provider.NetworkResult) ingress {
	vip := res.Ingress.VIP
	if !vip.IsValid() {
		return ingress{}
	}
	in := ingress{known: true, addresses: []string{vip.String() + "/32"}, privateIP: vip.String(), project: res.Project}
	if res.Ingress.Advertised != vip.String() {
		in.publicIP = res.Ingress.Advertised
	}
	return in
}

// openstackFrom is the OpenStack cloud of cfg, nil on another provider.
// cinder needs its application credential (AR-6): missing or multi-line
// credentials are a configuration error naming the keys.
func openstackFrom(cfg *config.Cluster, cinder bool) (*openstackInfo, error) {
	o := cfg.OpenStack
	if o == nil {
		return nil, nil //nolint:nilnil // not on OpenStack: nothing to report
	}
	region := o.Region
	if region == "" {
		region = "RegionOne"
	}
	info := &openstackInfo{authURL: o.URL, region: region, credentialID: o.CredentialID.Reveal(), credentialSecr: o.CredentialSecret.Reveal()}
	if !cinder {
		return info, nil
	}
	var errs []error
	for _, kv := range [][2]string{{"openstack.url", info.authURL}, {"openstack.credential_id", info.credentialID}, {"openstack.credential_secret", info.credentialSecr}} {
		switch key, v := kv[0], kv[1]; {
		case strings.TrimSpace(v) == "":
			errs = append(errs, fmt.Errorf("%s: argocd.cinder.enabled delivers a cloud.conf to the cluster and needs it; set it (credentials in secrets.yaml) or disable cinder", key))
		case strings.ContainsAny(v, "\r\n"):
			errs = append(errs, fmt.Errorf("%s: holds a line break, which a cloud.conf cannot carry", key))
		}
	}
	return info, errors.Join(errs...)
}
