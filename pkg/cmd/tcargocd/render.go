package tcargocd

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"

	"github.com/talosc/talosc/pkg/kube"
)

// Where the plugin's objects live and who owns them.
const (
	// FieldManager is the server-side apply field manager of every object.
	FieldManager = "talosc"
	// Namespace is Argo CD's namespace on the management cluster.
	Namespace = "argocd"
	// LabelManagedBy and LabelCluster mark what the plugin applied: destroy
	// and the deletions of converge touch only objects carrying both, the
	// second naming this cluster.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelCluster   = "talosc.io/cluster"
	managedBy      = "talosc"
	// AnnotationRancherID stamps the Rancher cluster id on the cluster
	// Secret (AR-7); Argo CD copies it onto its Cluster. A talosc
	// convention, meaningless to Rancher and Argo CD (plugins.md §3.3).
	AnnotationRancherID = "rancher.cattle.io/cluster-id"
	secretTypeLabel     = "argocd.argoproj.io/secret-type"
	// inCluster is Argo CD's own cluster, where its Applications live.
	inCluster = "https://kubernetes.default.svc"
	// CinderNamespace and CinderSecret are where the downstream cluster
	// gets its cloud.conf (AR-6).
	CinderNamespace = "cinder-csi"
	CinderSecret    = "cinder-csi-cloud-config"
	argoAPIVersion  = "argoproj.io/v1alpha1"
)

// target is the cluster an object lives in.
type target string

const (
	management target = "management"
	downstream target = "downstream"
)

// object is one object the plugin manages. A nil body means it must not
// exist (its feature is off): converge deletes it when it is ours.
type object struct {
	where target
	ref   kube.Ref
	kind  string
	body  map[string]any
	// secret: its data is never shown.
	secret bool
}

func (o object) String() string {
	return fmt.Sprintf("%s %s (%s cluster)", o.kind, nsName(o.ref), o.where)
}

func nsName(r kube.Ref) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// Object names (AR-3).
func clusterSecretName(cluster string) string { return "argocd-" + cluster + "-secret" }
func repoSecretName(cluster string) string    { return "repo-" + cluster }
func clusterAppName(cluster string) string    { return cluster + "-cluster" }

// refs are every object the plugin may manage for cluster, each with a nil
// body, in apply order: the management cluster's, then the downstream
// cluster's.
func refs(cluster string) []object {
	secret := func(ns, name string) kube.Ref {
		return kube.Ref{APIVersion: "v1", Resource: "secrets", Namespace: ns, Name: name}
	}
	argo := func(resource, name string) kube.Ref {
		return kube.Ref{APIVersion: argoAPIVersion, Resource: resource, Namespace: Namespace, Name: name}
	}
	return []object{
		{where: management, kind: "Secret", ref: secret(Namespace, clusterSecretName(cluster)), secret: true},
		{where: management, kind: "AppProject", ref: argo("appprojects", cluster)},
		{where: management, kind: "Secret", ref: secret(Namespace, repoSecretName(cluster)), secret: true},
		{where: management, kind: "Application", ref: argo("applications", cluster)},
		{where: management, kind: "Application", ref: argo("applications", clusterAppName(cluster))},
		{where: downstream, kind: "Secret", ref: secret(CinderNamespace, CinderSecret), secret: true},
	}
}

// inputs are what the objects are rendered from besides the settings.
type inputs struct {
	// access is this cluster's API as its kubeconfig reaches it.
	access access
	// rancherID is the Rancher cluster id, "" when unknown (AR-7).
	rancherID string
	// ingress are the MetalLB and ingress addresses (AR-4).
	ingress ingress
	// openstack is set on OpenStack.
	openstack *openstackInfo
}

// render returns every object of refs with the body it must have, nil for
// those that must not exist. It fails before anything is applied when a
// project role policy would not pass Argo CD's own checks.
func render(s settings, in inputs) ([]object, error) {
	objs := refs(s.cluster)
	objs[0].body = clusterSecret(s, in)
	project, err := appProject(s, in.access.server)
	if err != nil {
		return nil, err
	}
	objs[1].body = project
	if s.repositories() {
		objs[2].body = repoSecret(s)
		objs[3].body = rootApplication(s)
		values, err := clusterValues(s, in)
		if err != nil {
			return nil, err
		}
		objs[4].body = clusterApplication(s, values)
	}
	if in.openstack != nil && s.enabled("cinder") {
		objs[5].body = cinderSecret(s, *in.openstack)
	}
	return objs, nil
}

// metadata is an object's metadata with the plugin's ownership labels.
func metadata(s settings, ns, name string, labels map[string]any) map[string]any {
	l := map[string]any{LabelManagedBy: managedBy, LabelCluster: s.cluster}
	maps.Copy(l, labels)
	m := map[string]any{"name": name, "labels": l}
	if ns != "" {
		m["namespace"] = ns
	}
	return m
}

// secretData base64-encodes a Secret's string data.
func secretData(kv map[string]string) map[string]any {
	out := make(map[string]any, len(kv))
	for k, v := range kv {
		out[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	return out
}

// clusterSecret is Argo CD's declarative cluster Secret (plugins.md §3.3:
// tlsClientConfig's caData/certData/keyData are []byte, so base64 of the
// PEM, as the kubeconfig holds them).
func clusterSecret(s settings, in inputs) map[string]any {
	meta := metadata(s, Namespace, clusterSecretName(s.cluster), map[string]any{secretTypeLabel: "cluster"})
	if in.rancherID != "" {
		meta["annotations"] = map[string]any{AnnotationRancherID: in.rancherID}
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": meta,
		"data": secretData(map[string]string{
			"name": s.cluster, "server": in.access.server, "config": in.access.config,
		}),
	}
}

// appProject is the cluster's AppProject: every source, the downstream
// cluster and Argo CD's own namespace as destinations, every cluster
// resource, and the admin and user roles whose groups are the emails.
func appProject(s settings, server string) (map[string]any, error) {
	n := s.cluster
	roles := []struct {
		name, action string
		groups       []string
	}{{"admin", "*", s.admins}, {"user", "get", s.users}}
	var list []any
	var errs []error
	for _, r := range roles {
		policy := fmt.Sprintf("p, proj:%s:%s, applications, %s, %s/*, allow", n, r.name, r.action, n)
		errs = append(errs, validRoleName(r.name), validPolicy(n, r.name, policy))
		groups := make([]any, 0, len(r.groups))
		for _, g := range r.groups {
			errs = append(errs, validGroup(g))
			groups = append(groups, g)
		}
		list = append(list, map[string]any{"name": r.name, "policies": []any{policy}, "groups": groups})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("AppProject %s: %w", n, err)
	}
	return map[string]any{
		"apiVersion": argoAPIVersion, "kind": "AppProject",
		"metadata": metadata(s, Namespace, n, nil),
		"spec": map[string]any{
			"sourceRepos": []any{"*"},
			"destinations": []any{
				map[string]any{"server": server, "namespace": "*"},
				map[string]any{"server": inCluster, "namespace": Namespace},
			},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
			"roles":                    list,
		},
	}, nil
}

// repoSecret is the project-scoped repository Secret of git.url.
func repoSecret(s settings) map[string]any {
	data := map[string]string{"url": s.gitURL, "type": "git", "name": clusterAppName(s.cluster), "project": s.cluster}
	if s.gitUsername != "" {
		data["username"] = s.gitUsername
	}
	if s.gitToken != "" {
		data["password"] = s.gitToken
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": metadata(s, Namespace, repoSecretName(s.cluster), map[string]any{secretTypeLabel: "repository"}),
		"data":     secretData(data),
	}
}

// application is an Application of charts/apps in repo at HEAD with the
// Helm values (a YAML document), synced into Argo CD's namespace.
func application(s settings, name, repo, values string) map[string]any {
	sync := map[string]any{"syncOptions": []any{"CreateNamespace=true"}}
	if s.automated {
		sync["automated"] = map[string]any{"prune": true, "selfHeal": true}
	}
	return map[string]any{
		"apiVersion": argoAPIVersion, "kind": "Application",
		"metadata": metadata(s, Namespace, name, nil),
		"spec": map[string]any{
			"project": s.cluster,
			"source": map[string]any{
				"repoURL": repo, "path": "charts/apps", "targetRevision": "HEAD",
				"helm": map[string]any{"values": values},
			},
			"destination": map[string]any{"server": inCluster, "namespace": Namespace},
			"syncPolicy":  sync,
		},
	}
}

// rootApplication is the app-of-apps of git.url.
func rootApplication(s settings) map[string]any {
	return application(s, s.cluster, s.gitURL, mustYAML(map[string]any{"cluster": s.cluster}))
}

// clusterApplication is the platform Application of infra.url.
func clusterApplication(s settings, values string) map[string]any {
	return application(s, clusterAppName(s.cluster), s.infraURL, values)
}
