package rancher

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

// Registration tokens Rancher makes itself: default-token for every
// cluster once its namespace exists, system once the agent connected
// (R@v2.11.3:pkg/controllers/provisioningv2/cluster/controller.go:322-341,
// pkg/systemaccount/systemaccount.go:89-121).
const (
	defaultToken = "default-token"
	systemToken  = "system"
)

type regToken struct {
	name, clusterID, token string
	created                time.Time
}

// Token is the inspection view of a cluster registration token.
type Token struct {
	ID, ClusterID, Token, ManifestURL string
}

func (t *regToken) id() string { return t.clusterID + ":" + t.name }

func (s *Server) manifestURL(t *regToken) string {
	return s.URL + "/v3/import/" + t.token + "_" + t.clusterID + ".yaml"
}

// tokenView is a token as v3 shows it: the commands and manifestUrl stay ""
// until a controller fills them, Options.CommandDelay after the create
// (R@v2.11.3:pkg/controllers/dashboard/clusterregistrationtoken/status.go);
// namespaceId is null.
func (s *Server) tokenView(t *regToken) map[string]any {
	v := map[string]any{
		"type": "clusterRegistrationToken", "baseType": "clusterRegistrationToken", "id": t.id(), "name": t.name,
		"namespaceId": nil, "clusterId": t.clusterID, "token": t.token, "state": "active", "uuid": t.id() + "-uuid",
		"creatorId": s.adminUserID(), "labels": map[string]string{}, "annotations": map[string]string{},
		"created": t.created.UTC().Format(time.RFC3339), "createdTS": t.created.UnixMilli(),
		"manifestUrl": "", "command": "", "insecureCommand": "", "nodeCommand": "", "insecureNodeCommand": "",
		"windowsNodeCommand": "", "insecureWindowsNodeCommand": "",
		"links": map[string]any{"self": s.URL + "/v3/clusterRegistrationTokens/" + t.id()},
	}
	if time.Since(t.created) < s.opts.CommandDelay {
		return v
	}
	u := s.manifestURL(t)
	v["manifestUrl"] = u
	v["command"] = "kubectl apply -f " + u
	v["insecureCommand"] = "curl --insecure -sfL " + u + " | kubectl apply -f -"
	node := "sudo docker run -d --privileged --restart=unless-stopped --net=host -v /etc/kubernetes:/etc/kubernetes -v /var/run:/var/run  " +
		AgentImage + " --server " + s.URL + " --token " + t.token + " --ca-checksum " + caChecksum(s.CAPEM)
	v["nodeCommand"], v["insecureNodeCommand"] = node, "curl --insecure -sfL "+s.URL+"/system-agent-install.sh | sudo sh -s - --server "+s.URL+" --token "+t.token
	return v
}

func (s *Server) tokenNamed(clusterID, name string) *regToken {
	i := slices.IndexFunc(s.tokens, func(t *regToken) bool { return t.clusterID == clusterID && t.name == name })
	if i < 0 {
		return nil
	}
	return s.tokens[i]
}

// addToken makes a token of 54 characters; callers hold s.mu.
func (s *Server) addToken(clusterID, name string, created time.Time) *regToken {
	t := &regToken{name: name, clusterID: clusterID, token: s.randID(54), created: created}
	s.tokens = append(s.tokens, t)
	slices.SortFunc(s.tokens, func(a, b *regToken) int { return strings.Compare(a.id(), b.id()) })
	return t
}

// createToken serves POST /v3/clusterRegistrationTokens. The token lives
// in the cluster's namespace: before that exists (or for a cluster that
// does not) the create fails as Kubernetes answers, translated by norman
// (N:store/proxy/error_wrapper.go).
func (s *Server) createToken(cl *call) (any, error) {
	var in struct {
		ClusterID string `json:"clusterId"`
	}
	if err := cl.decode(&in); err != nil {
		return nil, err
	}
	if in.ClusterID == "" {
		return nil, norman(http.StatusUnprocessableEntity, "MissingRequired", "", "clusterId")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clusters[in.ClusterID]
	if !ok || s.backingStatus(c) != "True" {
		return nil, notFound("namespaces", in.ClusterID)
	}
	t := s.addToken(c.id, "crt-"+s.randID(5), time.Now())
	return created(s.tokenView(t)), nil
}

// listTokens serves a cluster's tokens, sorted by id as norman sorts
// (N:api/handler/query.go): the "last row" is the largest id, system or
// default-token once they exist, not the newest.
func (s *Server) listTokens(cl *call) (any, error) {
	r := cl.r
	id := r.PathValue("id")
	if id == "" {
		id = r.URL.Query().Get("clusterId")
	}
	want := r.URL.Query().Get("token")
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.PathValue("id") != "" {
		if _, ok := s.clusters[id]; !ok {
			return nil, notFound("clusters.management.cattle.io", id)
		}
	}
	var data []map[string]any
	for _, t := range s.tokens {
		if (id == "" || t.clusterID == id) && (want == "" || t.token == want) {
			data = append(data, s.tokenView(t))
		}
	}
	return s.collection("clusterRegistrationToken", r.URL.Path, data), nil
}

// Tokens returns every registration token, by id.
func (s *Server) Tokens() []Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle(time.Now())
	var out []Token
	for _, t := range s.tokens {
		out = append(out, Token{ID: t.id(), ClusterID: t.clusterID, Token: t.token, ManifestURL: s.manifestURL(t)})
	}
	return out
}

func isImportPath(p string) bool {
	return strings.HasPrefix(p, "/v3/import/") && strings.HasSuffix(p, ".yaml")
}

// importManifest serves GET /v3/import/<token>_<cluster>.yaml without
// authentication, in text/plain, as Rancher ≥ 2.11.16 does: a token and
// cluster that do not belong together get 400 "cluster not found or
// invalid token" (rancher/rancher c210ad2d82).
func (s *Server) importManifest(cl *call) (any, error) {
	r := cl.r
	name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v3/import/"), ".yaml")
	tok, clusterID, _ := strings.Cut(name, "_")
	s.mu.Lock()
	var found *regToken
	for _, t := range s.tokens {
		if c, ok := s.clusters[t.clusterID]; ok && c.removed.IsZero() && t.token == tok && t.clusterID == clusterID {
			found = t
		}
	}
	s.mu.Unlock()
	if found == nil {
		return plain{status: http.StatusBadRequest, text: "cluster not found or invalid token"}, nil
	}
	return plain{status: http.StatusOK, text: ImportManifest(s.URL, found.token, "", s.CAPEM)}, nil
}
