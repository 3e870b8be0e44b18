package rancher

import (
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
	conditionBacking   = "BackingNamespaceCreated"
)

type cluster struct {
	id, name  string
	created   time.Time
	connected bool
}

// Cluster is the inspection view of a cluster.
type Cluster struct {
	ID, Name, State string
	// BackingNamespaceCreated is the condition's status ("Unknown"/"True").
	BackingNamespaceCreated string
}

func (s *Server) backingStatus(c *cluster) string {
	if time.Since(c.created) >= s.opts.ConditionDelay {
		return "True"
	}
	return "Unknown"
}

func (s *Server) clusterView(c *cluster) map[string]any {
	state, ready := "pending", "Unknown"
	if c.connected {
		state, ready = "active", "True"
	}
	ts := c.created.UTC().Format(time.RFC3339)
	self := s.URL + "/v3/clusters/" + c.id
	return map[string]any{
		"type": "cluster", "baseType": "cluster", "id": c.id, "name": c.name, "uuid": c.id + "-uuid",
		"state": state, "transitioning": map[bool]string{true: "no", false: "yes"}[c.connected], "transitioningMessage": "",
		"driver": "imported", "internal": false, "creatorId": strings.TrimPrefix(s.AdminPrincipalID, "local://"),
		"created": ts, "createdTS": c.created.UnixMilli(),
		"labels": map[string]string{}, "annotations": map[string]string{},
		"conditions": []map[string]any{
			{"type": conditionBacking, "status": s.backingStatus(c), "lastUpdateTime": ts},
			{"type": "Ready", "status": ready, "lastUpdateTime": ts},
		},
		"links": map[string]any{
			"self": self, "update": self, "remove": self,
			"clusterRegistrationTokens":   self + "/clusterRegistrationTokens",
			"clusterRoleTemplateBindings": self + "/clusterroletemplatebindings",
		},
		"actions": map[string]any{"generateKubeconfig": self + "?action=generateKubeconfig"},
	}
}

func (s *Server) sortedClusters() []*cluster {
	out := make([]*cluster, 0, len(s.clusters))
	for _, c := range s.clusters {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// nameFilter reads ?name=<n> or the reference's ?filter=name=<n>.
func nameFilter(r *http.Request, ignoreFilter bool) (string, bool) {
	q := r.URL.Query()
	if q.Has("name") {
		return q.Get("name"), true
	}
	if n, ok := strings.CutPrefix(q.Get("filter"), "name="); ok && !ignoreFilter {
		return n, true
	}
	return "", false
}

func (s *Server) listClusters(w http.ResponseWriter, r *http.Request) {
	name, filtered := nameFilter(r, s.opts.IgnoreFilterParam)
	s.mu.Lock()
	var data []map[string]any
	for _, c := range s.sortedClusters() {
		if !filtered || c.name == name {
			data = append(data, s.clusterView(c))
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.collection("cluster", "/v3/clusters", data))
}

func (s *Server) createCluster(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Name == "" {
		apiError(w, http.StatusUnprocessableEntity, "MissingRequired", "missing required name", "name")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clusters {
		if c.name == in.Name {
			apiError(w, http.StatusUnprocessableEntity, "NotUnique", "Cluster name is not unique", "name")
			return
		}
	}
	c := &cluster{id: "c-" + s.randID(5), name: in.Name, created: time.Now()}
	s.clusters[c.id] = c
	s.bindings = append(s.bindings, &binding{
		name: CreatorBindingName, clusterID: c.id, userPrincipalID: s.AdminPrincipalID,
		roleTemplateID: "cluster-owner", created: c.created,
	})
	writeJSON(w, http.StatusCreated, s.clusterView(c))
}

func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clusters[r.PathValue("id")]
	if !ok {
		notFound(w, "clusters.management.cattle.io", r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, s.clusterView(c))
}

func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clusters[r.PathValue("id")]
	if !ok {
		notFound(w, "clusters.management.cattle.io", r.PathValue("id"))
		return
	}
	view := s.clusterView(c)
	view["state"], view["transitioning"] = "removing", "yes"
	delete(s.clusters, c.id)
	s.bindings = slices.DeleteFunc(s.bindings, func(b *binding) bool { return b.clusterID == c.id })
	s.tokens = slices.DeleteFunc(s.tokens, func(t *regToken) bool { return t.clusterID == c.id })
	writeJSON(w, http.StatusOK, view)
}

func notFound(w http.ResponseWriter, resource, id string) {
	apiError(w, http.StatusNotFound, "NotFound", resource+` "`+id+`" not found`)
}

// MarkConnected makes a cluster "active", as when its agent connects.
func (s *Server) MarkConnected(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clusters[id]
	if ok {
		c.connected = true
	}
	return ok
}

// Clusters returns every cluster, by id.
func (s *Server) Clusters() []Cluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Cluster
	for _, c := range s.sortedClusters() {
		v := s.clusterView(c)
		out = append(out, Cluster{ID: c.id, Name: c.name, State: v["state"].(string), BackingNamespaceCreated: s.backingStatus(c)})
	}
	return out
}
