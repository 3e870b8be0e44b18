// Package argocd is talosc-lab's Argo CD management cluster: the cluster
// the argocd plugin applies to (secrets.yaml's argocd.kubeconfig points at
// it). It is a second real kube-apiserver (package kubeapi) with an
// identity of its own (its own Kubernetes CA) and Argo CD's CustomResource
// Definitions, applications.argoproj.io and appprojects.argoproj.io,
// installed unmodified from crds/ (embedded), so the plugin's AppProject
// and Application objects are checked by the real OpenAPI schemas and its
// cluster and repository Secrets land in namespace "argocd".
//
// Start runs the apiserver on Options.Address (a loopback VIP and port),
// creates both CRDs with server-side apply, waits until the apiserver
// reports them Established and creates namespace "argocd". Requests to the
// Address go through kubeapi's front door (labnet faults and recorder,
// service "kubernetes"); the set-up itself talks to the apiserver directly
// and is neither recorded nor given faults.
//
// Not simulated: Argo CD itself. No argocd-server, repo-server,
// application-controller or ApplicationSet controller runs, so nothing
// reconciles: Applications never sync and get no status (sync, health,
// resources, conditions), cluster Secrets are never connected to (no
// connection state), repository Secrets are never fetched, AppProject roles
// issue no JWT tokens, finalizers such as
// resources-finalizer.argocd.argoproj.io are never removed (an Application
// carrying one stays Terminating), and there is no Argo CD API or UI (the
// plugin's argocd.url/argocd.token are not an apply target anyway). The
// argocd-cm/argocd-rbac-cm ConfigMaps, Argo CD's own Deployments and the
// ApplicationSet CRD are not installed. Everything kubeapi does not
// simulate (no controller-manager, so no garbage collection and namespaces
// stay Terminating) holds here too.
package argocd
