package tcrancher

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/rancherapi"
)

// observed is what the rancher plugin knows of the cluster's identity:
// the Rancher cluster named after it, the agent the downstream cluster
// holds, and whether that agent's token belongs to the Rancher cluster.
type observed struct {
	name    string
	url     string
	cluster *rancherapi.Cluster
	agent   rancherapi.Agent
	// tokenOfCluster: the agent's token is one of cluster's registration
	// tokens (asked only when the agent has no cluster id yet).
	tokenOfCluster bool
	// identity is this cluster's (kubeIdentity), the one talosc marks the
	// Rancher clusters it creates with.
	identity string
	// duplicates are more Rancher clusters of this name, talosc's for this
	// cluster and unused, beside cluster (session.pick).
	duplicates []rancherapi.Cluster
}

// verdict is what the identity allows.
type verdict int

const (
	// importNew: no Rancher cluster, no agent: import.
	importNew verdict = iota
	// resumeImport: the Rancher cluster exists, pending, carries talosc's
	// marker for this cluster, and no agent is installed: an earlier import
	// stopped before applying the manifest.
	resumeImport
	// attached: the agent belongs to the Rancher cluster (connected and
	// redeployed with its id, or registered with one of its tokens and not
	// connected yet). Its manifest is never applied again (rancher#38072).
	attached
	// mismatch: the Rancher cluster of that name is not this cluster's.
	mismatch
	// orphanAgent: no Rancher cluster of that name, but an agent of this
	// Rancher is installed: its cluster was deleted in Rancher.
	orphanAgent
	// foreignAgent: the agent is registered with another Rancher.
	foreignAgent
)

// sameServer compares two Rancher URLs, trailing slashes aside.
func sameServer(a, b string) bool {
	return strings.TrimRight(strings.TrimSpace(a), "/") == strings.TrimRight(strings.TrimSpace(b), "/")
}

// decide is RA-4: reuse the Rancher cluster only when the downstream agent
// proves it is this cluster's, resume an import that never reached the
// downstream cluster, and refuse everything else with the reason.
func (o observed) decide() (verdict, string) {
	a, c := o.agent, o.cluster
	switch {
	case a.Installed && !sameServer(a.URL, o.url):
		return foreignAgent, fmt.Sprintf("the downstream cluster's Rancher agent is registered with %s, not %s; refusing to touch it", a.URL, o.url)
	case c == nil && !a.Installed:
		return importNew, ""
	case c == nil:
		return orphanAgent, fmt.Sprintf("Rancher has no cluster named %q, but the downstream cluster runs an agent of this Rancher (%s); its Rancher cluster was deleted: "+
			"run \"kubectl talosc plugin rancher destroy\" to uninstall the orphaned agent, then converge to import the cluster again", o.name, agentID(a))
	case !a.Installed && !c.Connected():
		return o.pending()
	case !a.Installed:
		return mismatch, fmt.Sprintf("the Rancher cluster %q (%s) is connected, but this cluster runs no Rancher agent: it does not match the downstream cluster; refusing to attach", o.name, c.ID)
	case a.ClusterID == c.ID, a.ClusterID == "" && o.tokenOfCluster:
		return attached, ""
	}
	return mismatch, fmt.Sprintf("the Rancher cluster %q (%s) does not match the downstream cluster (its agent is %s); refusing to attach", o.name, c.ID, agentID(a))
}

// pending decides on a pending Rancher cluster of this name while no agent
// runs downstream: only talosc's marker for this very cluster proves it an
// import of this cluster that stopped (RA-12). One without it is
// someone else's, or talosc's for an earlier cluster of this name: never
// resumed, bound or deleted.
func (o observed) pending() (verdict, string) {
	c := o.cluster
	switch {
	case c.MarkedFor(o.identity):
		return resumeImport, ""
	case c.Marked():
		return mismatch, fmt.Sprintf("the pending Rancher cluster %q (%s) was made by talosc for another cluster of this name (an earlier one: its Kubernetes CA is not this cluster's); "+
			"refusing to resume, bind or delete it: delete it in Rancher, then converge", o.name, c.ID)
	}
	return mismatch, fmt.Sprintf("the pending Rancher cluster %q (%s) does not carry talosc's marker (label %s=%s), so it does not match the downstream cluster; "+
		"refusing to resume, bind or delete it: delete it in Rancher if nobody is importing a cluster into it, then converge", o.name, c.ID, rancherapi.ManagedByLabel, rancherapi.ManagedBy)
}

// kubeIdentity is the cluster's identity as talosc marks its Rancher
// cluster with it: the SHA-256 of its Kubernetes CA certificate, which the
// kubeconfig carries and which comes from the cluster's identity
// (talossecrets.yaml): a later cluster of the same name has another.
func kubeIdentity(caPEM []byte) (string, error) {
	block, _ := pem.Decode(caPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", errors.New("the cluster's kubeconfig carries no CA certificate (certificate-authority-data); talosc marks the cluster's Rancher import with it: use the kubeconfig talosc wrote")
	}
	sum := sha256.Sum256(block.Bytes)
	return "k8s-ca-sha256-" + hex.EncodeToString(sum[:]), nil
}

// agentID describes an agent by the id it carries.
func agentID(a rancherapi.Agent) string {
	if a.ClusterID != "" {
		return "cluster id " + a.ClusterID
	}
	return "registered, not yet connected"
}
