// Package rancher is the lab's Rancher server: the slice of Rancher's v3
// (norman) API that talosc's rancher plugin calls (reference-behaviour §4.2
// RA-2): clusters (lookup by name, import, get, delete), cluster
// registration tokens, the unauthenticated import manifest, the principals
// search action and cluster role template bindings. It serves HTTPS on
// loopback with a self-signed CA (Server.CAPEM), requires
// "Authorization: Bearer token-xxxxx:yyyy" (401 "must authenticate"
// otherwise), records every call as service "rancher" and honours the lab's
// fault knobs.
//
// Shapes follow Rancher v3: resources carry "type", "id", "baseType" and
// "links"; lists are {"type":"collection","resourceType":…,"pagination":…,
// "data":[…]}; errors are {"type":"error","baseType":"error","status":N,
// "code":"NotFound"|"MissingRequired"|"NotUnique"|"InvalidReference"|…,
// "message":…} (the 401 carries its status as a string, as Rancher's auth
// filter does). An imported cluster starts "pending" with the condition
// BackingNamespaceCreated "Unknown"; it turns "True" after
// Options.ConditionDelay, and only then are registration tokens accepted
// (before, Rancher answers 404 for the missing namespace). Creating a
// cluster creates the "creator-cluster-owner" binding of the token's user.
//
// Identity of an imported cluster: the import manifest (Namespace
// cattle-system, ServiceAccount cattle, Secret cattle-credentials-<hash>
// with url/token/namespace, Deployment cattle-cluster-agent) carries the
// cluster id in the agent's env CATTLE_CLUSTER_ID, its annotation
// "management.cattle.io/cluster-id" and the credentials Secret's
// "namespace" key — the lab's stand-in for the id talosc reads back from the
// downstream agent.
//
// Not simulated: the Steve (/v1) API, websockets and the agent tunnel (an
// agent never connects by itself; MarkConnected makes a cluster "active"),
// provisioning clusters (RKE2/K3s, node drivers, machine pools), projects,
// global/project role bindings, role templates beyond a fixed list,
// authentication providers other than a static principal list (search is a
// case-insensitive prefix match on login name and display name, for users
// and groups alike), tokens API, API keys, basic auth, pagination markers
// (every list is one page), "removing" delays (a delete is immediate),
// field filters other than clusters' name (?name= and the reference's
// ?filter=name=, see Options.IgnoreFilterParam) and bindings' clusterId,
// userPrincipalId and roleTemplateId, sorting, PUT/update actions and the
// UI. Error bodies other than the ones listed above (list-shaped "message",
// "errors[]") are produced on demand with Server.ScriptError.
package rancher
