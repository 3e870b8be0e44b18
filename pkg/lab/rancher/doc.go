// Package rancher is the lab's Rancher server: the slice of Rancher's v3
// (norman) API that talosc's rancher plugin calls, answering as Rancher
// v2.11 does where docs/plugins.md says how (each rule names its source
// in the code). It serves HTTPS on loopback with a
// self-signed CA (Server.CAPEM), requires "Authorization: Bearer
// token-xxxxx:yyyy" (401 {"status":"401","message":"Unauthorized 401: must
// authenticate"} otherwise), records every call as service "rancher" and
// honours the lab's fault knobs.
//
// Clusters: the "local" cluster is always there. GET /v3/clusters filters
// on ?name= only (exact, case-sensitive); ?filter=name= is ignored, as
// norman ignores any parameter that names no field, so it lists every
// cluster. A create answers 201 with the cluster pending, driver "" and
// its conditions (BackingNamespaceCreated, CreatorMadeOwner, …) Unknown
// for Options.ConditionDelay; Provisioned and Waiting ("Waiting for API to
// be available") stay Unknown until the agent connects. An empty name is
// 422 MissingRequired and a name a live cluster has, in any case, 422
// NotUnique, both with fieldName "Cluster name" and an empty message. A
// delete answers 200 and the cluster stays listed as "removing" (removed
// set, its name free) for Options.RemoveDelay. Lists are sorted by id.
//
// Registration tokens: refused with 404 `namespaces "c-…" not found`
// until the cluster's namespace exists; then Rancher adds its own
// default-token, and system once the agent connects. A token's command
// and manifestUrl are "" for Options.CommandDelay after its create; the
// list is sorted by id, so the last row is system or default-token, not
// the newest. The import URL is unauthenticated and answers text/plain:
// the manifest (the documents of Rancher's agent template, in its order,
// with the credentials Secret's namespace "" and no cluster id anywhere),
// or 400 "cluster not found or invalid token".
//
// The agent: WatchAgents (and ConnectAgent, once) plays the cluster agent
// in a downstream kube-apiserver where the manifest was applied. It
// authenticates with its credentials' token; Rancher finds the token's
// cluster, marks it active and imported, and redeploys the agent with its
// system token and the cluster id as the credentials' namespace (a second
// cattle-credentials-* Secret, which the Deployment's
// CATTLE_CREDENTIAL_NAME and volume then name), and puts cattle-system in
// the System project (annotation and label field.cattle.io/projectId,
// finalizer controller.cattle.io/namespace-auth). An agent of another
// Rancher, or of a cluster deleted since, does not connect.
//
// Principals: the search is the one of Options.Provider, the auth
// provider of the token's user: local (ids local://u-xxxxx, whose stem is
// never the username; Rancher's ≤ 6-character prefix index or longer
// substring), OpenLDAP (openldap_user://uid=<login>,ou=users,dc=lab) or
// Shibboleth with an OpenLDAP search (shibboleth_user://<login>), both a
// case-insensitive prefix search over users and groups with the matching
// local users appended. An unknown action is 422 InvalidAction.
//
// Bindings: a new cluster gets its creator's creator-cluster-owner binding
// (annotation authz.management.cattle.io/creator-owner-binding) and, for
// every User.GlobalOwner, a crtb-grb-* binding (label
// authz.management.cattle.io/grb-owner) that comes back under a new name
// when deleted. As on Rancher 2.8–2.14, identical bindings may coexist,
// an unknown principal is accepted (a user u-xxxxxxxxxx is made for it),
// an unknown role template is 500 ServerError, and namespaceId is null.
//
// Not simulated: the Steve (/v1) API, websockets and a real agent tunnel,
// provisioning clusters, projects beyond the System project's id, global
// and project role bindings (but for the crtb-grb-* ones), the tokens
// API, pagination markers (every list is one page), filters other than
// clusters' name, tokens' clusterId and token, and bindings' clusterId,
// userPrincipalId and roleTemplateId, PUT/update actions, Rancher's
// cleanup Job downstream after a delete (the agent and cattle-system stay,
// finalizer included), and the UI. Error bodies other than the ones listed
// above (list-shaped "message", "errors[]") are produced on demand with
// Server.ScriptError.
package rancher
