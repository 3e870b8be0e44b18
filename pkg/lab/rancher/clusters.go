package rancher

import (
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

const (
	// CreatorBindingName is the name of the binding Rancher makes for a
	// cluster's creator (role cluster-owner).
	CreatorBindingName = "creator-cluster-owner"
	// CreatorBindingAnnotation marks the creator's binding.
	CreatorBindingAnnotation = "authz.management.cattle.io/creator-owner-binding"
	// GlobalRoleOwnerLabel marks a crtb-grb-* binding a GlobalRole's
	// inheritedClusterRoles made; its value names the GlobalRoleBinding.
	GlobalRoleOwnerLabel = "authz.management.cattle.io/grb-owner"
	conditionBacking     = "BackingNamespaceCreated"
	// localCluster is the cluster Rancher runs in, always there.
	localCluster = "local"
)

// initialConditions turn True once the cluster's backing namespace exists
// (R@v2.11.3:pkg/apis/management.cattle.io/v3/cluster_types.go).
var initialConditions = []string{conditionBacking, "CreatorMadeOwner", "DefaultProjectCreated", "SystemProjectCreated", "InitialRolesPopulated"}

type cluster struct {
	id, name  string
	created   time.Time
	connected bool
	// removed is when DELETE was asked; zero while the cluster lives.
	removed time.Time
	// redeployed is set once Rancher redeployed the connected agent
	// downstream, into project, the cluster's System project.
	redeployed bool
	project    string
	// labels and annotations are the creator's, kept as Rancher keeps
	// them on the cluster object beside its own.
	labels, annotations map[string]string
}

// Cluster is the inspection view of a cluster.
type Cluster struct {
	ID, Name, State string
	// BackingNamespaceCreated is the condition's status ("Unknown"/"True").
	BackingNamespaceCreated string
	// Connected is whether its agent connected.
	Connected bool
}

func (s *Server) backingStatus(c *cluster) string {
	if c.id == localCluster || time.Since(c.created) >= s.opts.ConditionDelay {
		return "True"
	}
	return "Unknown"
}

// conditions are c's conditions as Rancher's controllers set them: the
// initial ones, then Pending/Provisioned/Waiting "Waiting for API to be
// available" until the agent connects, then Connected, Ready and the
// agent's own (R@v2.11.3:pkg/controllers/management/clusterprovisioner/provisioner.go:396-411).
func (s *Server) conditions(c *cluster) []map[string]any {
	ts := c.created.UTC().Format(time.RFC3339)
	cond := func(typ, status, msg string) map[string]any {
		return map[string]any{"type": typ, "status": status, "message": msg, "lastUpdateTime": ts}
	}
	var out []map[string]any
	for _, typ := range initialConditions {
		out = append(out, cond(typ, s.backingStatus(c), ""))
	}
	if !c.connected {
		return append(out, cond("Pending", "Unknown", ""), cond("Provisioned", "Unknown", ""),
			cond("Waiting", "Unknown", "Waiting for API to be available"))
	}
	return append(out, cond("Pending", "True", ""), cond("Provisioned", "True", ""), cond("Waiting", "True", ""),
		cond("Connected", "True", ""), cond("Ready", "True", ""), cond("SystemAccountCreated", "True", ""), cond("AgentDeployed", "True", ""))
}

func (s *Server) clusterView(c *cluster) map[string]any {
	state, transitioning, message, driver := "pending", "yes", "Waiting for API to be available", ""
	if c.connected {
		state, transitioning, message, driver = "active", "no", "", "imported"
	}
	if c.id == localCluster {
		driver = "local"
	}
	var removed any
	if !c.removed.IsZero() {
		state, transitioning, message, removed = "removing", "yes", "", c.removed.UTC().Format(time.RFC3339)
	}
	self := s.URL + "/v3/clusters/" + c.id
	return map[string]any{
		"type": "cluster", "baseType": "cluster", "id": c.id, "name": c.name, "uuid": c.id + "-uuid",
		"state": state, "transitioning": transitioning, "transitioningMessage": message, "removed": removed,
		"driver": driver, "internal": c.id == localCluster, "creatorId": s.adminUserID(),
		"created": c.created.UTC().Format(time.RFC3339), "createdTS": c.created.UnixMilli(),
		"fleetWorkspaceName": "fleet-default", "apiEndpoint": "", "agentImage": "", "version": nil,
		"labels":      merged(c.labels, "cattle.io/creator", "norman"),
		"annotations": merged(c.annotations, "field.cattle.io/creatorId", s.adminUserID()),
		"conditions":  s.conditions(c),
		"links": map[string]any{
			"self": self, "update": self, "remove": self,
			"clusterregistrationtokens":   self + "/clusterregistrationtokens",
			"clusterroletemplatebindings": self + "/clusterroletemplatebindings",
		},
		"actions": map[string]any{"generateKubeconfig": self + "?action=generateKubeconfig"},
	}
}

// merged is the creator's map m with Rancher's own key set to value.
func merged(m map[string]string, key, value string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}

// adminUserID is the Rancher user behind the token.
func (s *Server) adminUserID() string { return strings.TrimPrefix(s.AdminPrincipalID, "local://") }

func (s *Server) sortedClusters() []*cluster {
	out := make([]*cluster, 0, len(s.clusters))
	for _, c := range s.clusters {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// listClusters serves GET /v3/clusters. Only ?name=<n> filters (exactly,
// case-sensitively); norman ignores query parameters that name no field,
// so the reference's ?filter=name=<n> answers every cluster, local
// included (N:parse/collection.go parseFilters).
func (s *Server) listClusters(cl *call) (any, error) {
	r := cl.r
	q := r.URL.Query()
	s.mu.Lock()
	var data []map[string]any
	for _, c := range s.sortedClusters() {
		if !q.Has("name") || c.name == q.Get("name") {
			data = append(data, s.clusterView(c))
		}
	}
	s.mu.Unlock()
	return s.collection("cluster", "/v3/clusters", data), nil
}

// createCluster serves POST /v3/clusters: an empty name is MissingRequired
// and a name another live cluster has, whatever its case, NotUnique, both
// with fieldName "Cluster name" and an empty message
// (R@v2.11.3:pkg/api/norman/store/cluster/cluster_store.go:243-253,1161-1175).
func (s *Server) createCluster(cl *call) (any, error) {
	var in struct {
		Type        string            `json:"type"`
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := cl.decode(&in); err != nil {
		return nil, err
	}
	if in.Name == "" {
		return nil, norman(http.StatusUnprocessableEntity, "MissingRequired", "", "Cluster name")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clusters {
		if c.removed.IsZero() && strings.EqualFold(c.name, in.Name) {
			return nil, norman(http.StatusUnprocessableEntity, "NotUnique", "", "Cluster name")
		}
	}
	c := &cluster{id: "c-" + s.randID(5), name: in.Name, created: time.Now(), labels: in.Labels, annotations: in.Annotations}
	s.clusters[c.id] = c
	s.bindings = append(s.bindings, &binding{
		name: CreatorBindingName, clusterID: c.id, userPrincipalID: s.AdminPrincipalID, userID: s.adminUserID(),
		roleTemplateID: "cluster-owner", created: c.created, annotations: map[string]string{CreatorBindingAnnotation: "true"},
	})
	s.globalRoleBindings(c)
	return created(s.clusterView(c)), nil
}

func (s *Server) getCluster(cl *call) (any, error) {
	r := cl.r
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clusters[r.PathValue("id")]
	if !ok {
		return nil, notFound("clusters.management.cattle.io", r.PathValue("id"))
	}
	return s.clusterView(c), nil
}

// deleteCluster serves DELETE /v3/clusters/<id>: 200 with the object,
// which stays listed as "removing" for Options.RemoveDelay
// (N:store/proxy/proxy_store.go:525-550). No cleanup Job reaches the
// downstream cluster: its agent and cattle-system stay as they are.
func (s *Server) deleteCluster(cl *call) (any, error) {
	r := cl.r
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clusters[r.PathValue("id")]
	if !ok || c.id == localCluster {
		return nil, notFound("clusters.management.cattle.io", r.PathValue("id"))
	}
	if c.removed.IsZero() {
		c.removed = time.Now()
	}
	view := s.clusterView(c)
	s.settle(time.Now())
	return view, nil
}

// settle runs what Rancher's controllers do in the background, as of now:
// removing clusters whose RemoveDelay passed (with their tokens and
// bindings), and giving each cluster whose namespace exists its
// default-token. Callers hold s.mu.
func (s *Server) settle(now time.Time) {
	for id, c := range s.clusters {
		if !c.removed.IsZero() && now.Sub(c.removed) >= s.opts.RemoveDelay {
			delete(s.clusters, id)
			s.bindings = slices.DeleteFunc(s.bindings, func(b *binding) bool { return b.clusterID == id })
			s.tokens = slices.DeleteFunc(s.tokens, func(t *regToken) bool { return t.clusterID == id })
		}
	}
	for _, c := range s.clusters {
		if c.id != localCluster && s.backingStatus(c) == "True" && s.tokenNamed(c.id, defaultToken) == nil {
			s.addToken(c.id, defaultToken, c.created.Add(s.opts.ConditionDelay))
		}
	}
}

// Clusters returns every cluster but local, by id.
func (s *Server) Clusters() []Cluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle(time.Now())
	var out []Cluster
	for _, c := range s.sortedClusters() {
		if c.id == localCluster {
			continue
		}
		v := s.clusterView(c)
		out = append(out, Cluster{ID: c.id, Name: c.name, State: v["state"].(string), BackingNamespaceCreated: s.backingStatus(c), Connected: c.connected})
	}
	return out
}
