package proxmox

import (
	"crypto/sha1" //nolint:gosec // PVE's config digest is SHA-1; not used for security
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// vm is one QEMU guest: its config (what runs), pending changes (what the
// next restart applies), power state, guest agent and firewall.
type vm struct {
	vmid       int
	node       string
	conf       map[string]string
	pending    map[string]string
	pendingDel map[string]bool
	running    bool
	lock       string
	started    time.Time
	pid        int
	agentUp    bool
	guest      []GuestInterface
	fwOptions  map[string]string
	fwRules    []map[string]string
}

// GuestInterface is what the guest agent reports for one NIC.
type GuestInterface struct {
	// Name is the interface name ("eth0").
	Name string
	// MAC defaults to the MAC of the VM's NIC with the same index.
	MAC   string
	Addrs []netip.Prefix
}

func newVM(vmid int, node string) *vm {
	return &vm{vmid: vmid, node: node, conf: map[string]string{}, pending: map[string]string{}, pendingDel: map[string]bool{}, fwOptions: map[string]string{}}
}

// effective is the config with pending changes applied (GET config).
func (v *vm) effective() map[string]string {
	out := make(map[string]string, len(v.conf)+len(v.pending))
	for k, val := range v.conf {
		if !v.pendingDel[k] {
			out[k] = val
		}
	}
	maps.Copy(out, v.pending)
	return out
}

// applyPending makes pending changes current (a VM (re)start).
func (v *vm) applyPending() {
	v.conf = v.effective()
	v.pending, v.pendingDel = map[string]string{}, map[string]bool{}
}

func digestOf(m map[string]string) string {
	h := sha1.New() //nolint:gosec // see import
	for _, k := range sortedKeys(m) {
		fmt.Fprintf(h, "%s: %s\n", k, m[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (v *vm) digest() string {
	all := maps.Clone(v.conf)
	for k, val := range v.pending {
		all["pending."+k] = val
	}
	for k := range v.pendingDel {
		all["delete."+k] = "1"
	}
	return digestOf(all)
}

// memBytes is the memory the running config gives the VM.
func (v *vm) memBytes() uint64 {
	mib, err := strconv.ParseUint(v.conf["memory"], 10, 64)
	if err != nil || mib == 0 {
		mib = 512
	}
	return mib << 20
}

func (v *vm) cpus() int {
	if n, err := strconv.Atoi(v.conf["vcpus"]); err == nil && n > 0 {
		return n
	}
	cores, sockets := atoiOr(v.conf["cores"], 1), atoiOr(v.conf["sockets"], 1)
	return cores * sockets
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return n
	}
	return def
}

// driveVolumes lists the volumes the config's drives reference: disks
// (including unused ones) or CD-ROM media.
func driveVolumes(conf map[string]string, cdrom bool) []string {
	var out []string
	for _, k := range sortedKeys(conf) {
		if !reDrive.MatchString(k) && !reUnused.MatchString(k) {
			continue
		}
		opts, _ := propString(conf[k], "file")
		f := opts["file"]
		if f == "" || f == "none" || f == "cdrom" || !strings.Contains(f, ":") || isCDROM(conf[k]) != cdrom {
			continue
		}
		out = append(out, f)
	}
	return out
}

// volumes are the disk volumes the VM owns, in its config or pending.
func (v *vm) volumes() []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]string{v.conf, v.pending} {
		for _, f := range driveVolumes(m, false) {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// maxDisk is the size of the boot disk (the first scsi/virtio/sata disk).
func (v *vm) maxDisk() uint64 {
	for _, prefix := range []string{"scsi", "virtio", "sata", "ide"} {
		for i := range 31 {
			val, ok := v.conf[prefix+strconv.Itoa(i)]
			if !ok || isCDROM(val) {
				continue
			}
			opts, _ := propString(val, "file")
			if b, err := parseSize(opts["size"]); err == nil {
				return b
			}
		}
	}
	return 0
}

// parseSize parses qemu-server sizes: 32G, 4M, 528K, 1T, or bytes.
func parseSize(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := uint64(1)
	switch s[len(s)-1] {
	case 'K', 'k':
		mult = 1 << 10
	case 'M', 'm':
		mult = 1 << 20
	case 'G', 'g':
		mult = 1 << 30
	case 'T', 't':
		mult = 1 << 40
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return uint64(f * float64(mult)), nil
}

// formatSize renders bytes the way qemu-server writes size= options.
func formatSize(b uint64) string {
	for _, u := range []struct {
		suffix string
		n      uint64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if b >= u.n && b%u.n == 0 {
			return strconv.FormatUint(b/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatUint(b, 10)
}

// nics returns the VM's NICs by index: model, MAC and options.
func (v *vm) nicMAC(i int) string {
	val := v.conf["net"+strconv.Itoa(i)]
	if val == "" {
		return ""
	}
	_, mac, _ := parseNet(val)
	return mac
}

// parseNet splits "virtio=MAC,bridge=...": model, MAC, other options.
func parseNet(val string) (model, mac string, opts map[string]string) {
	opts, order := propString(val, "model")
	for _, k := range order {
		switch k {
		case "virtio", "e1000", "e1000e", "rtl8139", "vmxnet3", "i82551", "i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet":
			model, mac = k, opts[k]
			delete(opts, k)
		case "model":
			model = opts[k]
			delete(opts, k)
		case "macaddr":
			mac = opts[k]
			delete(opts, k)
		}
	}
	return model, mac, opts
}

// newMAC generates a MAC in Proxmox's BC:24:11 range. The caller holds s.mu.
func (s *Server) newMAC() string {
	for {
		mac := fmt.Sprintf("BC:24:11:%02X:%02X:%02X", s.rng.IntN(256), s.rng.IntN(256), s.rng.IntN(256))
		used := false
		for _, v := range s.vms {
			for i := range 32 {
				used = used || strings.EqualFold(v.nicMAC(i), mac)
			}
		}
		if !used {
			return mac
		}
	}
}

// uuid returns a random UUID (smbios1) from the server's seeded generator.
// The caller holds s.mu.
func (s *Server) uuid() string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(s.rng.IntN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
