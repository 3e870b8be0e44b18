package proxmox

import (
	"regexp"
	"slices"
	"strings"
)

// Families of qm config keys.
var (
	reDrive   = regexp.MustCompile(`^(ide[0-3]|sata[0-5]|scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|efidisk0|tpmstate0)$`)
	reNet     = regexp.MustCompile(`^net([0-9]|[12][0-9]|3[01])$`)
	reUnused  = regexp.MustCompile(`^unused([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])$`)
	reIndexed = regexp.MustCompile(`^(serial[0-3]|parallel[0-2]|usb[0-4]|hostpci([0-9]|1[0-5])|numa[0-7]|ipconfig([0-9]|[12][0-9]|3[01])|virtiofs[0-9])$`)
)

// qemuOptionKeys are the plain (non-indexed) qm config keys.
var qemuOptionKeys = []string{
	"acpi", "affinity", "agent", "amd-sev", "arch", "args", "audio0", "autostart", "balloon", "bios", "boot", "bootdisk",
	"cdrom", "cicustom", "cipassword", "citype", "ciupgrade", "ciuser", "cores", "cpu", "cpulimit", "cpuunits", "description",
	"freeze", "hookscript", "hotplug", "hugepages", "intel-tdx", "ivshmem", "keephugepages", "keyboard", "kvm", "localtime", "lock",
	"machine", "memory", "meta", "migrate_downtime", "migrate_speed", "name", "nameserver", "numa", "onboot", "ostype",
	"protection", "reboot", "rng0", "scsihw", "searchdomain", "shares", "smbios1", "smp", "sockets", "spice_enhancements",
	"sshkeys", "startdate", "startup", "tablet", "tags", "tdf", "template", "tpmstate0", "vcpus", "vga", "vmgenid",
	"vmstatestorage", "watchdog",
}

func isConfigKey(k string) bool {
	return slices.Contains(qemuOptionKeys, k) || reDrive.MatchString(k) || reNet.MatchString(k) || reUnused.MatchString(k) || reIndexed.MatchString(k)
}

// configSchema accepts every config key plus the given extra parameters.
func configSchema(extra ...string) schema {
	return schema{names: append(slices.Clone(qemuOptionKeys), extra...), families: []*regexp.Regexp{reDrive, reNet, reUnused, reIndexed}}
}

// qemuNumeric are the config keys PVE emits as JSON numbers.
var qemuNumeric = []string{
	"vmid", "cores", "sockets", "vcpus", "cpuunits", "balloon", "shares", "numa", "onboot", "template", "protection",
	"acpi", "kvm", "tablet", "autostart", "reboot", "localtime", "freeze", "keephugepages", "migrate_speed", "smp",
	"cpulimit", "migrate_downtime", "ciupgrade",
}

func qemuIsNumeric(k string) bool { return slices.Contains(qemuNumeric, k) }

// qemuBool are the boolean config keys (stored as 1/0).
var qemuBool = []string{"numa", "onboot", "template", "protection", "acpi", "kvm", "tablet", "autostart", "reboot", "localtime", "freeze", "keephugepages", "ciupgrade"}

// qemuInt are the integer config keys.
var qemuInt = []string{"cores", "sockets", "vcpus", "cpuunits", "balloon", "shares", "migrate_speed", "smp"}

// Privilege groups of qemu-server's check_vm_modify_config_perm.
var (
	cpuKeys     = []string{"affinity", "cores", "cpu", "cpulimit", "cpuunits", "numa", "smp", "sockets", "vcpus"}
	memoryKeys  = []string{"balloon", "hugepages", "keephugepages", "memory", "shares"}
	hwtypeKeys  = []string{"acpi", "amd-sev", "arch", "args", "audio0", "hotplug", "intel-tdx", "ivshmem", "kvm", "machine", "rng0", "scsihw", "smbios1", "spice_enhancements", "tablet", "vga", "vmgenid", "watchdog"}
	diskOptKeys = []string{"boot", "bootdisk", "vmstatestorage"}
	cloudKeys   = []string{"cicustom", "cipassword", "citype", "ciupgrade", "ciuser", "nameserver", "searchdomain", "sshkeys"}
)

// privilegeFor is the privilege needed to change key to value.
func privilegeFor(key, value string) string {
	switch {
	case key == "cdrom" || (reDrive.MatchString(key) && isCDROM(value)):
		return "VM.Config.CDROM"
	case reDrive.MatchString(key) || reUnused.MatchString(key) || slices.Contains(diskOptKeys, key):
		return "VM.Config.Disk"
	case reNet.MatchString(key):
		return "VM.Config.Network"
	case slices.Contains(cpuKeys, key) || strings.HasPrefix(key, "numa"):
		return "VM.Config.CPU"
	case slices.Contains(memoryKeys, key):
		return "VM.Config.Memory"
	case slices.Contains(cloudKeys, key) || strings.HasPrefix(key, "ipconfig"):
		return "VM.Config.Cloudinit"
	case slices.Contains(hwtypeKeys, key) || strings.HasPrefix(key, "serial") || strings.HasPrefix(key, "usb") ||
		strings.HasPrefix(key, "hostpci") || strings.HasPrefix(key, "parallel") || strings.HasPrefix(key, "virtiofs"):
		return "VM.Config.HWType"
	default:
		return "VM.Config.Options"
	}
}

func isCDROM(value string) bool {
	opts, _ := propString(value, "file")
	return opts["media"] == "cdrom" || opts["file"] == "cdrom"
}

// fastPlug are options a running VM takes at once (no hardware change).
var fastPlug = []string{"description", "hookscript", "lock", "meta", "name", "onboot", "protection", "shares", "startup", "tags", "vmstatestorage"}

// hotpluggable reports whether a change to key applies to a running VM at
// once under the default hotplug setting (network,disk,usb); anything else
// becomes a pending change until the VM is restarted.
func hotpluggable(key, newValue string, deleting bool) bool {
	switch {
	case slices.Contains(fastPlug, key), key == "balloon":
		return true
	case reNet.MatchString(key), strings.HasPrefix(key, "usb"), reUnused.MatchString(key):
		return true
	case strings.HasPrefix(key, "scsi") && key != "scsihw", strings.HasPrefix(key, "virtio") && !strings.HasPrefix(key, "virtiofs"):
		return true
	case (strings.HasPrefix(key, "ide") || strings.HasPrefix(key, "sata")) && !deleting && isCDROM(newValue):
		// A CD-ROM's medium is changed live; the device itself is not.
		return true
	}
	return false
}

var (
	dnsNameRe = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)
	tagRe     = regexp.MustCompile(`^(?i)[a-z0-9_][a-z0-9_\-+.]*$`)
	macRe     = regexp.MustCompile(`^(?i)[0-9a-f]{2}(:[0-9a-f]{2}){5}$`)
	memoryRe  = regexp.MustCompile(`^(current=)?(\d+)$`)
)

var enums = map[string][]string{
	"bios":   {"seabios", "ovmf"},
	"scsihw": {"lsi", "lsi53c810", "virtio-scsi-pci", "virtio-scsi-single", "megasas", "pvscsi"},
	"ostype": {"other", "wxp", "w2k", "w2k3", "w2k8", "wvista", "win7", "win8", "win10", "win11", "l24", "l26", "solaris"},
}

// normalizeValue validates one config value and returns it as PVE stores it.
func normalizeValue(k, v string) (string, error) {
	switch {
	case slices.Contains(qemuBool, k):
		return normBool(k, v)
	case slices.Contains(qemuInt, k):
		if _, err := parseInt(k, v); err != nil {
			return "", err
		}
	case k == "memory":
		m := memoryRe.FindStringSubmatch(v)
		if m == nil {
			return "", paramErr1(k, "value does not match the regex pattern")
		}
		return m[2], nil
	case k == "name":
		if !dnsNameRe.MatchString(v) {
			return "", paramErr1(k, "invalid format - value does not look like a valid DNS name")
		}
	case k == "tags":
		return normalizeTags(v)
	case enums[k] != nil:
		if !slices.Contains(enums[k], v) {
			return "", paramErr1(k, "value '%s' does not have a value in the enumeration '%s'", v, strings.Join(enums[k], ", "))
		}
	case k == "agent":
		if opts, _ := propString(v, "enabled"); opts["enabled"] != "" {
			if _, err := parseBool(k, opts["enabled"]); err != nil {
				return "", err
			}
		}
	}
	return v, nil
}

// normalizeTags splits on ; , and space, checks each tag, lower-cases,
// de-duplicates and sorts them, as get_unique_tags does with the default
// datacenter tag-style.
func normalizeTags(v string) (string, error) {
	var tags []string
	for _, t := range splitList(v) {
		if !tagRe.MatchString(t) {
			return "", paramErr1("tags", "invalid format - invalid characters in tag '%s'", t)
		}
		t = strings.ToLower(t)
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	slices.Sort(tags)
	return strings.Join(tags, ";"), nil
}

// printDrive renders a drive: the file first, then the options sorted by
// name, as qemu-server's print_drive does.
func printDrive(file string, opts map[string]string) string {
	parts := []string{file}
	for _, k := range sortedKeys(opts) {
		if k != "file" {
			parts = append(parts, k+"="+opts[k])
		}
	}
	return strings.Join(parts, ",")
}

// printNet renders a NIC: the model and MAC first, then sorted options.
func printNet(model, mac string, opts map[string]string) string {
	parts := []string{model + "=" + mac}
	for _, k := range sortedKeys(opts) {
		parts = append(parts, k+"="+opts[k])
	}
	return strings.Join(parts, ",")
}
