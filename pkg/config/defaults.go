package config

// Defaults of optional keys (§2.3).
const (
	DefaultRegion            = "RegionOne"
	DefaultCIDataStorage     = "local"
	DefaultPlacementStrategy = "spread"
)

// Defaults of the backup section's optional keys.
const (
	// DefaultBackupDir is backup.dir: backups/ beside cluster.yaml (init
	// puts it in .gitignore).
	DefaultBackupDir = "backups"
	// DefaultBackupMaxAge is backup.max_age: a daily backup with two hours
	// of slack.
	DefaultBackupMaxAge = "26h"
	DefaultKeepHourly   = 24
	DefaultKeepDaily    = 7
	DefaultKeepWeekly   = 4
	DefaultKeepMonthly  = 12
)

// defaults fills every key the files left unset. It runs before validation
// so cross-key checks see effective values; a key that was set (even to a
// refused value) is never overwritten.
func (v *validator) defaults() {
	c := v.c
	if c.OpenStack != nil && !v.present("openstack.region") {
		c.OpenStack.Region = DefaultRegion
	}
	if px := c.Proxmox; px != nil {
		if !v.present("proxmox.cidata_storage") {
			px.CIDataStorage = DefaultCIDataStorage
		}
		if !v.present("proxmox.placement_strategy") {
			px.PlacementStrategy = DefaultPlacementStrategy
		}
		if px.Network.Cluster.SDN != nil {
			v.sdnDefaults(px.Network.Cluster.SDN)
		}
	}
	if !v.present("network.cluster.mtu") {
		c.Network.Cluster.MTU = DefaultMTU
	}
	if ext := c.Network.External; ext != nil && !v.present("network.external.mtu") {
		ext.MTU = DefaultMTU
	}
	if c.Backup != nil {
		v.backupDefaults(c.Backup)
	}
	if c.Plugins == nil {
		c.Plugins = map[string]any{}
	}
}
