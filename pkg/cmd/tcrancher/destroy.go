package tcrancher

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/rancherapi"
	"github.com/talosc/talosc/pkg/state"
)

// agentObjects are the cluster-scoped objects of Rancher's agent template
// (R@v2.11.3:pkg/systemtemplate/template.go); the rest lives in
// cattle-system.
var agentObjects = []kube.Ref{
	{APIVersion: "rbac.authorization.k8s.io/v1", Resource: "clusterrolebindings", Name: "cattle-admin-binding"},
	{APIVersion: "rbac.authorization.k8s.io/v1", Resource: "clusterroles", Name: "cattle-admin"},
	{APIVersion: "rbac.authorization.k8s.io/v1", Resource: "clusterrolebindings", Name: "proxy-role-binding-kubernetes-master"},
	{APIVersion: "rbac.authorization.k8s.io/v1", Resource: "clusterroles", Name: "proxy-clusterrole-kubeapiserver"},
}

var agentNamespace = kube.Ref{APIVersion: "v1", Resource: "namespaces", Name: rancherapi.AgentNamespace}

// agentWorkload is the agent itself, deleted first: the namespace's
// deletion takes its content with it only in time.
var agentWorkload = []kube.Ref{
	{APIVersion: "apps/v1", Resource: "deployments", Namespace: rancherapi.AgentNamespace, Name: rancherapi.AgentDeployment},
	{APIVersion: "v1", Resource: "services", Namespace: rancherapi.AgentNamespace, Name: rancherapi.AgentDeployment},
}

// destroy removes the cluster from Rancher and the agent from the cluster
// (RA-10), only when the identity proves the Rancher cluster is this
// one's; an orphaned agent of this Rancher is uninstalled all the same.
func destroy(ctx context.Context, c *plugin.Context) (plugin.Result, error) {
	if !c.Bootstrapped() {
		return deferred(), nil
	}
	s, o, err := openObserved(ctx, c)
	if err != nil {
		return plugin.Result{}, err
	}
	v, why := o.decide()
	var plan []state.Change
	switch v {
	case mismatch, foreignAgent:
		return plugin.Result{}, errors.New(why)
	case importNew:
		return plugin.Result{Messages: []string{"nothing to remove: Rancher has no cluster " + o.name + " and the cluster runs no Rancher agent"}}, nil
	case orphanAgent: // only the agent is left to remove
	case resumeImport, attached:
		if plan, err = s.dropDuplicates(ctx, o, c.DryRun); err != nil {
			return plugin.Result{Plan: plan}, err
		}
		plan = append(plan, state.Change{Action: state.ActionDelete, Kind: "rancher:cluster", Name: o.name, Detail: o.cluster.ID})
		if !c.DryRun {
			if err := s.rancher.DeleteCluster(ctx, o.cluster.ID); err != nil {
				return plugin.Result{}, err
			}
		}
	}
	if o.agent.Installed {
		plan = append(plan, state.Change{Action: state.ActionDelete, Kind: "rancher:agent", Name: rancherapi.AgentNamespace, Detail: "the agent, its namespace (Rancher's finalizer taken off) and its cluster roles"})
		if !c.DryRun {
			if err := s.uninstallAgent(ctx); err != nil {
				return plugin.Result{}, err
			}
		}
	}
	return plugin.Result{Plan: plan}, nil
}

// uninstallAgent deletes the agent, its namespace and its cluster-scoped
// objects downstream, and takes Rancher's namespace-auth finalizer off the
// namespace: only Rancher's cleanup Job removes it, and a Rancher that let
// the cluster go runs none, so the namespace would stay Terminating
// (rancher/rancher#14848).
func (s *session) uninstallAgent(ctx context.Context) error {
	for _, ref := range append(slices.Clone(agentWorkload), agentObjects...) {
		if err := s.kube.Delete(ctx, ref); err != nil {
			return err
		}
	}
	if err := s.kube.Delete(ctx, agentNamespace); err != nil {
		return err
	}
	var ns struct {
		Metadata struct {
			Finalizers []string `json:"finalizers"`
		} `json:"metadata"`
	}
	found, err := s.kube.Get(ctx, agentNamespace, &ns)
	if err != nil || !found || !slices.Contains(ns.Metadata.Finalizers, rancherapi.NamespaceAuthFinalizer) {
		return err
	}
	rest := slices.DeleteFunc(ns.Metadata.Finalizers, func(f string) bool { return f == rancherapi.NamespaceAuthFinalizer })
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": rest}})
	if err != nil {
		return err
	}
	return s.kube.MergePatch(ctx, agentNamespace, patch)
}
