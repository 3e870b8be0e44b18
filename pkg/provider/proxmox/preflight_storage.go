package proxmox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/config"
)

// storageRole is one storage key of the proxmox section.
type storageRole struct {
	key, id, content string
	into             *Storage
}

// storages checks the three storages on every candidate node and narrows
// the candidates to the compute nodes (those reaching all of them).
func (c *Cloud) storages(ctx context.Context, px *config.Proxmox, env *Environment, candidates []Node) error {
	roles := []storageRole{
		{"proxmox.storage", px.Storage, "images", &env.Storage},
		{"proxmox.iso_storage", px.ISOStorage, "iso", &env.ISOStorage},
		{"proxmox.cidata_storage", px.CIDataStorage, "iso", &env.CIDataStorage},
	}
	seen, reaches, err := c.nodeStorages(ctx, candidates)
	if err != nil {
		return err
	}
	problems := checkStorageRoles(roles, seen)
	if env.CIDataStorage.Shared {
		problems = append(problems, fmt.Errorf("proxmox.cidata_storage: storage %q is shared; the per-VM cidata ISOs need node-local storage (e.g. local)", px.CIDataStorage))
	}
	if err := errors.Join(problems...); err != nil {
		return err
	}
	for _, n := range candidates {
		var lacking []string
		for _, r := range roles {
			if !reaches[n.Name][r.id] {
				lacking = append(lacking, fmt.Sprintf("%s (%s)", r.id, r.key))
			}
		}
		switch {
		case len(lacking) == 0:
			env.Nodes = append(env.Nodes, n)
		case len(px.Nodes) > 0:
			problems = append(problems, fmt.Errorf("proxmox.nodes: node %s does not reach storage %s; make the storage available there or remove the node", n.Name, strings.Join(lacking, ", ")))
		}
	}
	if err := errors.Join(problems...); err != nil {
		return err
	}
	if len(env.Nodes) == 0 {
		return fmt.Errorf("proxmox: no online node reaches all of %s, %s and %s; set proxmox.nodes or make the storages available", px.Storage, px.ISOStorage, px.CIDataStorage)
	}
	return nil
}

// nodeStorages lists the storages of every candidate node: each storage
// by id (from any node), and by node the storage ids it reaches (true
// when enabled there).
func (c *Cloud) nodeStorages(ctx context.Context, candidates []Node) (map[string]*goproxmox.Storage, map[string]map[string]bool, error) {
	seen := map[string]*goproxmox.Storage{}
	reaches := map[string]map[string]bool{}
	for _, n := range candidates {
		var list []*goproxmox.Storage
		if err := c.client.Get(ctx, "/nodes/"+n.Name+"/storage", &list); err != nil {
			return nil, nil, fmt.Errorf("proxmox: list the storages of node %s: %w", n.Name, err)
		}
		reaches[n.Name] = map[string]bool{}
		for _, st := range list {
			seen[st.Name] = st
			reaches[n.Name][st.Name] = st.Enabled == 1
		}
	}
	return seen, reaches, nil
}

// checkStorageRoles checks that each role's storage exists, is enabled
// and holds the role's content, and fills the role's Environment field.
func checkStorageRoles(roles []storageRole, seen map[string]*goproxmox.Storage) []error {
	var problems []error
	for _, r := range roles {
		st := seen[r.id]
		switch {
		case st == nil:
			problems = append(problems, fmt.Errorf("%s: storage %q does not exist on any candidate node (or the token lacks Datastore.Audit on /storage/%s); pick an existing storage", r.key, r.id, r.id))
			continue
		case st.Enabled != 1:
			problems = append(problems, fmt.Errorf("%s: storage %q is disabled; enable it or pick another storage", r.key, r.id))
			continue
		}
		content := strings.Split(st.Content, ",")
		if !slices.Contains(content, r.content) {
			problems = append(problems, fmt.Errorf("%s: storage %q does not hold %q content (it holds %s); add %s to its content or pick another storage", r.key, r.id, r.content, st.Content, r.content))
		}
		*r.into = Storage{ID: r.id, Type: st.Type, Content: content, Shared: st.Shared == 1}
	}
	return problems
}
