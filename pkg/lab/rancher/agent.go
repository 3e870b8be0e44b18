package rancher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// What Rancher stamps on the downstream cattle-system namespace once the
// agent connected (R@v2.11.3:pkg/controllers/managementuser/rbac/namespace_handler.go,
// handler_base.go:133; pkg/controllers/managementagent/nslabels/labels.go).
const (
	// ProjectIDKey is the annotation ("<cluster>:<project>") and label
	// ("<project>") of a namespace in a Rancher project.
	ProjectIDKey = "field.cattle.io/projectId"
	// NamespaceAuthFinalizer holds a downstream namespace until Rancher's
	// cleanup removes it.
	NamespaceAuthFinalizer = "controller.cattle.io/namespace-auth"
)

// ErrNoAgent is ConnectAgent's answer for a cluster without the agent.
var ErrNoAgent = errors.New("no cattle-cluster-agent Deployment")

// AgentCredentials reads what the downstream agent authenticates with:
// the name of its credentials Secret (CATTLE_CREDENTIAL_NAME, else the
// cattle-credentials volume) and that Secret's data.
func AgentCredentials(ctx context.Context, c kubernetes.Interface) (string, map[string][]byte, error) {
	d, err := c.AppsV1().Deployments(AgentNamespace).Get(ctx, AgentDeployment, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil, ErrNoAgent
	}
	if err != nil {
		return "", nil, err
	}
	name := ""
	for _, ct := range d.Spec.Template.Spec.Containers {
		for _, e := range ct.Env {
			if ct.Name == AgentContainer && e.Name == CredentialNameEnv {
				name = e.Value
			}
		}
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if name == "" && v.Name == CredentialsVolume && v.Secret != nil {
			name = v.Secret.SecretName
		}
	}
	if name == "" {
		return "", nil, errors.New("the agent names no credentials Secret")
	}
	sec, err := c.CoreV1().Secrets(AgentNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return name, nil, err
	}
	return name, sec.Data, nil
}

// ConnectAgent plays the agent running in the downstream cluster c and
// what Rancher does once it connected: the agent authenticates with its
// token, which names its cluster (R@v2.11.3:pkg/tunnelserver/mcmauthorizer/tunnel.go:390-410);
// the cluster turns active and imported; Rancher makes the system token
// and redeploys the agent with it and with the cluster id as its
// credentials' namespace, a new cattle-credentials Secret the Deployment
// then names (clusterdeploy.go:609-630); and the cattle-system namespace
// joins the System project, with Rancher's finalizer. It returns the
// cluster id. A cluster already connected is left alone.
func (s *Server) ConnectAgent(ctx context.Context, c kubernetes.Interface) (string, error) {
	_, data, err := AgentCredentials(ctx, c)
	if err != nil {
		return "", err
	}
	if url := string(data["url"]); url != s.URL {
		return "", fmt.Errorf("the agent connects to %q, not this Rancher", url)
	}
	s.mu.Lock()
	i := slices.IndexFunc(s.tokens, func(t *regToken) bool { return t.token == string(data["token"]) })
	var cl *cluster
	if i >= 0 {
		cl = s.clusters[s.tokens[i].clusterID]
	}
	switch {
	case cl == nil || !cl.removed.IsZero():
		s.mu.Unlock()
		return "", errors.New("the agent's token belongs to no cluster: Rancher refuses its connection")
	case cl.redeployed:
		s.mu.Unlock()
		return cl.id, nil
	}
	cl.connected = true
	sys := s.tokenNamed(cl.id, systemToken)
	if sys == nil {
		sys = s.addToken(cl.id, systemToken, time.Now())
	}
	if cl.project == "" {
		cl.project = "p-" + s.randID(5)
	}
	id, token, project := cl.id, sys.token, cl.project
	s.mu.Unlock()
	if err := s.redeploy(ctx, c, id, token, project); err != nil {
		return id, err // the next connection tries again
	}
	s.mu.Lock()
	cl.redeployed = true
	s.mu.Unlock()
	return id, nil
}

// redeploy applies the agent template for the cluster id and system token
// downstream: the new credentials Secret, the Deployment pointing at it,
// and cattle-system in the System project.
func (s *Server) redeploy(ctx context.Context, c kubernetes.Interface, id, token, project string) error {
	name := CredentialName(s.URL, token, id)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: AgentNamespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"url": []byte(s.URL), "token": []byte(token), "namespace": []byte(id)},
	}
	if _, err := c.CoreV1().Secrets(AgentNamespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("redeploy: %w", err)
	}
	d, err := c.AppsV1().Deployments(AgentNamespace).Get(ctx, AgentDeployment, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("redeploy: %w", err)
	}
	spec := &d.Spec.Template.Spec
	for i := range spec.Containers {
		for j := range spec.Containers[i].Env {
			if e := &spec.Containers[i].Env[j]; e.Name == CredentialNameEnv {
				e.Value = name
			}
		}
	}
	for i := range spec.Volumes {
		if v := &spec.Volumes[i]; v.Name == CredentialsVolume && v.Secret != nil {
			v.Secret.SecretName = name
		}
	}
	if _, err := c.AppsV1().Deployments(AgentNamespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("redeploy: %w", err)
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, AgentNamespace, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("redeploy: %w", err)
	}
	metav1.SetMetaDataAnnotation(&ns.ObjectMeta, ProjectIDKey, id+":"+project)
	metav1.SetMetaDataLabel(&ns.ObjectMeta, ProjectIDKey, project)
	if !slices.Contains(ns.Finalizers, NamespaceAuthFinalizer) {
		ns.Finalizers = append(ns.Finalizers, NamespaceAuthFinalizer)
	}
	if _, err := c.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("redeploy: %w", err)
	}
	return nil
}

// WatchAgents connects, every poll until ctx ends, the agent of each
// downstream cluster downstream returns: an agent comes up on its own
// once its manifest is applied, and connects when its token is good.
func (s *Server) WatchAgents(ctx context.Context, poll time.Duration, downstream func() []kubernetes.Interface) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		for _, c := range downstream() {
			cctx, cancel := context.WithTimeout(ctx, poll*4)
			_, _ = s.ConnectAgent(cctx, c) // an agent not there, or refused, retries at the next poll
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
