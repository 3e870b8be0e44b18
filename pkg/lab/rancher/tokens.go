package rancher

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

type regToken struct {
	name, clusterID, token string
	created                time.Time
}

// Token is the inspection view of a cluster registration token.
type Token struct {
	ID, ClusterID, Token, ManifestURL string
}

func (s *Server) manifestURL(t *regToken) string {
	return s.URL + "/v3/import/" + t.token + "_" + t.clusterID + ".yaml"
}

func (s *Server) tokenView(t *regToken) map[string]any {
	id := t.clusterID + ":" + t.name
	u := s.manifestURL(t)
	return map[string]any{
		"type": "clusterRegistrationToken", "baseType": "clusterRegistrationToken", "id": id, "name": t.name,
		"namespaceId": t.clusterID, "clusterId": t.clusterID, "token": t.token, "state": "active",
		"created": t.created.UTC().Format(time.RFC3339), "createdTS": t.created.UnixMilli(),
		"manifestUrl":     u,
		"command":         "kubectl apply -f " + u,
		"insecureCommand": "curl --insecure -sfL " + u + " | kubectl apply -f -",
		"nodeCommand":     "sudo docker run -d --privileged --restart=unless-stopped --net=host -v /etc/kubernetes:/etc/kubernetes -v /var/run:/var/run rancher/rancher-agent:v2.11.3 --server " + s.URL + " --token " + t.token,
		"links":           map[string]any{"self": s.URL + "/v3/clusterRegistrationTokens/" + id},
	}
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ClusterID string `json:"clusterId"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if in.ClusterID == "" {
		apiError(w, http.StatusUnprocessableEntity, "MissingRequired", "missing required clusterId", "clusterId")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clusters[in.ClusterID]
	if !ok {
		apiError(w, http.StatusUnprocessableEntity, "InvalidReference", "invalid reference for clusterId", "clusterId")
		return
	}
	if s.backingStatus(c) != "True" {
		notFound(w, "namespaces", c.id) // the cluster's backing namespace does not exist yet
		return
	}
	t := &regToken{name: "crt-" + s.randID(5), clusterID: c.id, token: s.randID(54), created: time.Now()}
	s.tokens = append(s.tokens, t)
	writeJSON(w, http.StatusCreated, s.tokenView(t))
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" {
		id = r.URL.Query().Get("clusterId")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.PathValue("id") != "" {
		if _, ok := s.clusters[id]; !ok {
			notFound(w, "clusters.management.cattle.io", id)
			return
		}
	}
	var data []map[string]any
	for _, t := range s.tokens {
		if id == "" || t.clusterID == id {
			data = append(data, s.tokenView(t))
		}
	}
	writeJSON(w, http.StatusOK, s.collection("clusterRegistrationToken", r.URL.Path, data))
}

// Tokens returns every registration token, oldest first.
func (s *Server) Tokens() []Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Token
	for _, t := range s.tokens {
		out = append(out, Token{ID: t.clusterID + ":" + t.name, ClusterID: t.clusterID, Token: t.token, ManifestURL: s.manifestURL(t)})
	}
	return out
}

func isImportPath(p string) bool {
	return strings.HasPrefix(p, "/v3/import/") && strings.HasSuffix(p, ".yaml")
}

func (s *Server) importManifest(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v3/import/"), ".yaml")
	tok, clusterID, _ := strings.Cut(name, "_")
	s.mu.Lock()
	var found *regToken
	for _, t := range s.tokens {
		if t.token == tok && t.clusterID == clusterID {
			found = t
		}
	}
	s.mu.Unlock()
	if found == nil {
		apiError(w, http.StatusNotFound, "NotFound", "invalid token")
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write([]byte(ImportManifest(s.URL, found.clusterID, found.token, s.CAPEM)))
}

// AgentClusterIDEnv is the env var of the cattle-cluster-agent container
// that carries the cluster id in the lab's import manifest.
const AgentClusterIDEnv = "CATTLE_CLUSTER_ID"

// ClusterIDAnnotation is the cattle-cluster-agent Deployment annotation
// that carries the cluster id.
const ClusterIDAnnotation = "management.cattle.io/cluster-id"

// ImportManifest renders the multi-document YAML served at a token's
// manifest URL for cluster clusterID.
func ImportManifest(serverURL, clusterID, token string, caPEM []byte) string {
	sum := sha256.Sum256(caPEM)
	credHash := sha256.Sum256([]byte(serverURL + token))
	secret := "cattle-credentials-" + hex.EncodeToString(credHash[:])[:7]
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf(`---
apiVersion: v1
kind: Namespace
metadata:
  name: cattle-system
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: cattle
  namespace: cattle-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: cattle-admin-binding
  labels:
    cattle.io/creator: norman
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: cattle
  namespace: cattle-system
---
apiVersion: v1
kind: Secret
metadata:
  name: %[1]s
  namespace: cattle-system
type: Opaque
data:
  url: %[2]q
  token: %[3]q
  namespace: %[4]q
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cattle-cluster-agent
  namespace: cattle-system
  annotations:
    management.cattle.io/scale-available: "2"
    %[5]s: %[6]q
spec:
  selector:
    matchLabels:
      app: cattle-cluster-agent
  template:
    metadata:
      labels:
        app: cattle-cluster-agent
    spec:
      serviceAccountName: cattle
      containers:
      - name: cluster-register
        image: rancher/rancher-agent:v2.11.3
        imagePullPolicy: IfNotPresent
        env:
        - name: CATTLE_SERVER
          value: %[7]q
        - name: CATTLE_CA_CHECKSUM
          value: %[8]q
        - name: CATTLE_CLUSTER
          value: "true"
        - name: CATTLE_K8S_MANAGED
          value: "true"
        - name: %[9]s
          value: %[6]q
        volumeMounts:
        - name: cattle-credentials
          mountPath: /cattle-credentials
          readOnly: true
      volumes:
      - name: cattle-credentials
        secret:
          secretName: %[1]s
          defaultMode: 320
`, secret, b64([]byte(serverURL)), b64([]byte(token)), b64([]byte(clusterID)),
		ClusterIDAnnotation, clusterID, serverURL, hex.EncodeToString(sum[:]), AgentClusterIDEnv)
}
