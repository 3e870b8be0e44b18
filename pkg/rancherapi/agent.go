package rancherapi

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/talosc/talosc/pkg/kube"
)

// What Rancher's agent template installs downstream
// (R@v2.11.3:pkg/systemtemplate/template.go).
const (
	AgentNamespace    = "cattle-system"
	AgentDeployment   = "cattle-cluster-agent"
	agentContainer    = "cluster-register"
	credentialNameEnv = "CATTLE_CREDENTIAL_NAME"
	credentialsVolume = "cattle-credentials"
	// NamespaceAuthFinalizer is the finalizer Rancher puts on downstream
	// namespaces; only Rancher's cleanup removes it.
	NamespaceAuthFinalizer = "controller.cattle.io/namespace-auth"
)

// Agent is the Rancher cluster agent as the downstream cluster holds it.
type Agent struct {
	// Installed: the cattle-cluster-agent Deployment exists.
	Installed bool
	// Credential is the credentials Secret the Deployment names.
	Credential string
	// URL and Token are what the agent authenticates to Rancher with.
	URL, Token string
	// ClusterID is the credentials' namespace: the Rancher cluster id once
	// Rancher redeployed the agent after it connected, "" before (the
	// import manifest carries no id).
	ClusterID string
}

type deployment struct {
	Spec struct {
		Template struct {
			Spec struct {
				Containers []struct {
					Name string `json:"name"`
					Env  []struct {
						Name  string `json:"name"`
						Value string `json:"value"`
					} `json:"env"`
				} `json:"containers"`
				Volumes []struct {
					Name   string `json:"name"`
					Secret *struct {
						SecretName string `json:"secretName"`
					} `json:"secret"`
				} `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// credentialName is the Secret the agent reads: CATTLE_CREDENTIAL_NAME
// (2.9.9+/2.10.5+/2.11.1+), else the cattle-credentials volume's. Several
// cattle-credentials-* Secrets may exist, so it is never found by listing.
func (d deployment) credentialName() string {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if c.Name == agentContainer && e.Name == credentialNameEnv && e.Value != "" {
				return e.Value
			}
		}
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == credentialsVolume && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}

// ReadAgent reads the agent from the downstream cluster k (plugins.md
// §2.7): the Deployment, then the credentials Secret it names. No
// Deployment is an agent not installed; a Deployment whose Secret is
// missing or unreadable is an error, never "not installed".
func ReadAgent(ctx context.Context, k *kube.Client) (Agent, error) {
	var d deployment
	found, err := k.Get(ctx, kube.Ref{APIVersion: "apps/v1", Resource: "deployments", Namespace: AgentNamespace, Name: AgentDeployment}, &d)
	if err != nil || !found {
		return Agent{}, err
	}
	a := Agent{Installed: true, Credential: d.credentialName()}
	if a.Credential == "" {
		return a, fmt.Errorf("the Rancher agent (%s/%s) names no credentials Secret: a broken install", AgentNamespace, AgentDeployment)
	}
	var sec struct {
		Data map[string]string `json:"data"`
	}
	found, err = k.Get(ctx, kube.Ref{APIVersion: "v1", Resource: "secrets", Namespace: AgentNamespace, Name: a.Credential}, &sec)
	if err != nil {
		return a, err
	}
	if !found {
		return a, fmt.Errorf("the Rancher agent's credentials Secret %s/%s is missing: a broken install", AgentNamespace, a.Credential)
	}
	for key, dst := range map[string]*string{"url": &a.URL, "token": &a.Token, "namespace": &a.ClusterID} {
		v, err := base64.StdEncoding.DecodeString(sec.Data[key])
		if err != nil {
			return a, fmt.Errorf("the Rancher agent's credentials Secret %s: %s is not base64", a.Credential, key)
		}
		*dst = string(v)
	}
	return a, nil
}
