package proxmox

import (
	"context"
	"fmt"
	"slices"
	"strings"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/provider"
)

// Status reports the Proxmox cluster (never the token) and counts the
// cluster's owned VMs and its pool; it only reads.
func (c *Cloud) Status(ctx context.Context) (*provider.Status, error) {
	cluster := c.cluster
	var nodes goproxmox.NodeStatuses
	if err := c.client.Get(ctx, "/nodes", &nodes); err != nil {
		return nil, fmt.Errorf("proxmox: list the nodes: %w", err)
	}
	var online []string
	for _, n := range nodes {
		if n.Status == "online" {
			online = append(online, n.Node)
		}
	}
	slices.Sort(online)
	pool, err := c.ownedPool(ctx, cluster.Name)
	if err != nil {
		return nil, err
	}
	vms, err := c.ownedVMs(ctx, cluster.Name)
	if err != nil {
		return nil, err
	}
	px := cluster.Proxmox
	st := &provider.Status{
		Summary: fmt.Sprintf("proxmox: %s (online nodes: %s)", c.url, strings.Join(online, ", ")),
		Details: map[string]string{
			"url": c.url, "online_nodes": strings.Join(online, ","), "storage": px.Storage, "iso_storage": px.ISOStorage,
		},
		Resources: map[string]int{"vms": len(vms), "pools": 0},
	}
	if pool != nil {
		st.Resources["pools"] = 1
	}
	if ext := cluster.Network.External; ext != nil && ext.IngressPool.IsValid() {
		st.Details["ingress_pool"] = ext.IngressPool.String()
	}
	return st, nil
}
