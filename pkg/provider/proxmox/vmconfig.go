package proxmox

import (
	"context"
	"fmt"
	"sync"
)

// vmConfigs is a VM's config in both views, values as strings: next with
// the pending changes applied (what the next Proxmox start runs), running
// without them (what the VM runs now).
type vmConfigs struct {
	next, running map[string]string
}

// configCache holds the VM configs one run has read, so the methods that
// each look at every VM (ValidateMachines, ReconcileMachines,
// PendingRestart, FinalizeMachines) share one read. Every mutation of a
// VM through the Cloud forgets its entry; changes others make during the
// run are not seen. Cached maps are never modified.
type configCache struct {
	mu sync.Mutex
	m  map[configKey]vmConfigs
}

// configKey is one VM.
type configKey struct {
	node string
	vmid int
}

func (cc *configCache) get(k configKey) (vmConfigs, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	v, ok := cc.m[k]
	return v, ok
}

func (cc *configCache) put(k configKey, v vmConfigs) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.m == nil {
		cc.m = map[configKey]vmConfigs{}
	}
	cc.m[k] = v
}

// forget drops a VM's config.
func (cc *configCache) forget(node string, vmid int) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.m, configKey{node, vmid})
}

// readConfig reads a VM's config with its pending changes applied.
func (c *Cloud) readConfig(ctx context.Context, host, node string, vmid int) (map[string]string, error) {
	v, err := c.readConfigs(ctx, host, node, vmid)
	return v.next, err
}

// pendingEntry is one key as GET .../pending lists it: the running value,
// the pending one, and whether the key is to be deleted (1, or 2 forced).
type pendingEntry struct {
	Key     string `json:"key"`
	Value   any    `json:"value"`
	Pending any    `json:"pending"`
	Delete  int    `json:"delete"`
}

// readConfigs reads both views of a VM's config with one GET .../pending,
// or returns the ones read earlier in the run and not changed by it since.
func (c *Cloud) readConfigs(ctx context.Context, host, node string, vmid int) (vmConfigs, error) {
	key := configKey{node, vmid}
	if v, ok := c.configs.get(key); ok {
		return v, nil
	}
	var list []pendingEntry
	if err := c.client.Get(ctx, vmPath(node, vmid)+"/pending", &list); err != nil {
		return vmConfigs{}, fmt.Errorf("read the config of VM %s (%d on %s): %w", host, vmid, node, err)
	}
	v := vmConfigs{next: map[string]string{}, running: map[string]string{}}
	for _, e := range list {
		if e.Value != nil {
			v.running[e.Key] = fmt.Sprint(e.Value)
			v.next[e.Key] = v.running[e.Key]
		}
		switch {
		case e.Delete != 0:
			delete(v.next, e.Key)
		case e.Pending != nil:
			v.next[e.Key] = fmt.Sprint(e.Pending)
		}
	}
	c.configs.put(key, v)
	return v, nil
}

// putConfig writes keys of a VM's config.
func (c *Cloud) putConfig(ctx context.Context, vm vmTarget, body map[string]string) error {
	defer c.configs.forget(vm.node, vm.vmid)
	if err := c.client.Put(ctx, vmPath(vm.node, vm.vmid)+"/config", body, nil); err != nil {
		return fmt.Errorf("update the config of VM %d: %w", vm.vmid, err)
	}
	return nil
}
