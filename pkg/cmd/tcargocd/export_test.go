package tcargocd

import (
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
)

// ValidPolicy is validPolicy, for its table test.
var ValidPolicy = validPolicy

// ClusterValues renders the cluster Application's Helm values of cfg with
// the merged section and the state document doc, for a cluster whose API
// is server and whose Rancher id is rancherID.
func ClusterValues(cfg *config.Cluster, section any, doc *state.Document, server, rancherID string) (string, error) {
	s := readSettings(cfg, section)
	ing, err := ingressOf(cfg, doc)
	if err != nil {
		return "", err
	}
	os, err := openstackFrom(cfg, false)
	if err != nil {
		return "", err
	}
	return clusterValues(s, inputs{access: access{server: server}, rancherID: rancherID, ingress: ing, openstack: os})
}
