package rancher

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// What the import manifest installs downstream, by the names Rancher gives
// them (R@v2.11.3:pkg/systemtemplate/template.go).
const (
	// AgentNamespace is the namespace of the cluster agent.
	AgentNamespace = "cattle-system"
	// AgentDeployment is the cluster agent's Deployment.
	AgentDeployment = "cattle-cluster-agent"
	// AgentContainer is its container.
	AgentContainer = "cluster-register"
	// CredentialNameEnv names the agent's credentials Secret
	// (2.9.9+/2.10.5+/2.11.1+).
	CredentialNameEnv = "CATTLE_CREDENTIAL_NAME"
	// CredentialsVolume is the volume that mounts that Secret.
	CredentialsVolume = "cattle-credentials"
	// AgentImage is the agent image the lab's Rancher (v2.11.3) deploys.
	AgentImage = "rancher/rancher-agent:v2.11.3"
	// ServerVersion is the Rancher version the lab answers as.
	ServerVersion = "v2.11.3"
)

// CredentialName is the cattle-credentials Secret of a manifest rendered
// for url, token and namespace (TokenKey, 2.9.9+/2.10.5+/2.11.1+:
// hex(sha256(url.token.namespace))[:10]).
func CredentialName(url, token, namespace string) string {
	sum := sha256.Sum256([]byte(url + "." + token + "." + namespace))
	return "cattle-credentials-" + hex.EncodeToString(sum[:])[:10]
}

// caChecksum is CATTLE_CA_CHECKSUM: the sha256 of the cacerts setting with
// a trailing newline.
func caChecksum(caPEM []byte) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(caPEM)) + "\n"))
	return hex.EncodeToString(sum[:])
}

// ImportManifest renders the agent template for serverURL and token.
// namespace is "" in the import manifest the registration token's URL
// serves (the agent does not know its cluster yet), and the cluster id in
// the redeploy Rancher applies once the agent connected (plugins.md
// §2.5).
func ImportManifest(serverURL, token, namespace string, caPEM []byte) string {
	secret := CredentialName(serverURL, token, namespace)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return fmt.Sprintf(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: proxy-clusterrole-kubeapiserver
rules:
- apiGroups: [""]
  resources: [nodes/metrics, nodes/proxy, nodes/stats, nodes/log, nodes/spec]
  verbs: [get, list, watch, create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: proxy-role-binding-kubernetes-master
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: proxy-clusterrole-kubeapiserver
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: kube-apiserver
---
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
    cattle.io/creator: "norman"
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cattle-admin
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
  url: "%[2]s"
  token: "%[3]s"
  namespace: "%[4]s"
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cattle-admin
  labels:
    cattle.io/creator: "norman"
rules:
- apiGroups: ["*"]
  resources: ["*"]
  verbs: ["*"]
- nonResourceURLs: ["*"]
  verbs: ["*"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cattle-cluster-agent
  namespace: cattle-system
  annotations:
    management.cattle.io/scale-available: "2"
spec:
  selector:
    matchLabels:
      app: cattle-cluster-agent
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 0
      maxSurge: 1
  template:
    metadata:
      labels:
        app: cattle-cluster-agent
    spec:
      serviceAccountName: cattle
      tolerations:
      - effect: NoSchedule
        key: node-role.kubernetes.io/controlplane
        value: "true"
      - effect: NoSchedule
        key: "node-role.kubernetes.io/control-plane"
        operator: "Exists"
      - effect: NoSchedule
        key: "node-role.kubernetes.io/master"
        operator: "Exists"
      containers:
      - name: cluster-register
        imagePullPolicy: IfNotPresent
        env:
        - name: CATTLE_IS_RKE
          value: "false"
        - name: CATTLE_SERVER
          value: "%[5]s"
        - name: CATTLE_CA_CHECKSUM
          value: "%[6]s"
        - name: CATTLE_CLUSTER
          value: "true"
        - name: CATTLE_K8S_MANAGED
          value: "true"
        - name: CATTLE_CLUSTER_REGISTRY
          value: ""
        - name: CATTLE_CREDENTIAL_NAME
          value: %[1]s
        - name: CATTLE_SERVER_VERSION
          value: %[7]s
        - name: CATTLE_INSTALL_UUID
          value: 7c1f5b3e-lab0-4e6a-9d3c-2f6f0c1a0001
        - name: CATTLE_INGRESS_IP_DOMAIN
          value: sslip.io
        - name: STRICT_VERIFY
          value: "false"
        image: %[8]s
        volumeMounts:
        - name: cattle-credentials
          mountPath: /cattle-credentials
          readOnly: true
      volumes:
      - name: cattle-credentials
        secret:
          secretName: %[1]s
          defaultMode: 320
---
apiVersion: v1
kind: Service
metadata:
  name: cattle-cluster-agent
  namespace: cattle-system
spec:
  ports:
  - port: 80
    targetPort: 80
    protocol: TCP
    name: http
  - port: 443
    targetPort: 444
    protocol: TCP
    name: https-internal
  selector:
    app: cattle-cluster-agent
`, secret, b64(serverURL), b64(token), b64(namespace), serverURL, caChecksum(caPEM), ServerVersion, AgentImage)
}
