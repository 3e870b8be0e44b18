package factory

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/talosc/talosc/pkg/config"
)

// Installer platforms of the providers: the <platform> in
// "<platform>-installer" and in boot artifact names.
const (
	// PlatformOpenStack is the OpenStack platform (config drive metadata).
	PlatformOpenStack = "openstack"
	// PlatformNoCloud is the NoCloud platform Proxmox VMs boot with (cidata ISO).
	PlatformNoCloud = "nocloud"
)

// Boot artifacts, the last path element of /image/<id>/<version>/<artifact>.
const (
	// ArtifactOpenStack is the xz-compressed raw disk uploaded to Glance.
	ArtifactOpenStack = "openstack-amd64.raw.xz"
	// ArtifactNoCloudISO is the ISO Proxmox boots new VMs from.
	ArtifactNoCloudISO = "nocloud-amd64.iso"
	// ArtifactNoCloudSecureBootISO is the SecureBoot variant of ArtifactNoCloudISO.
	ArtifactNoCloudSecureBootISO = "nocloud-amd64-secureboot.iso"
)

// idPrefixLen is how many hex digits of the schematic id a boot image name
// carries: enough to tell schematics apart, short enough to read.
const idPrefixLen = 12

// legacySuffix ends the pre-0.8 boot image name, whose schematic was
// always the base set.
const legacySuffix = "-tailscale"

// PlatformFor returns the installer platform of a provider
// (config.ProviderOpenStack or config.ProviderProxmox).
func PlatformFor(provider string) (string, error) {
	switch provider {
	case config.ProviderOpenStack:
		return PlatformOpenStack, nil
	case config.ProviderProxmox:
		return PlatformNoCloud, nil
	}
	return "", fmt.Errorf("installer platform: unknown provider %q (want %q or %q)",
		provider, config.ProviderOpenStack, config.ProviderProxmox)
}

// BootArtifact returns the factory artifact a provider boots new machines
// from: openstack-amd64.raw.xz for OpenStack, nocloud-amd64[-secureboot].iso
// for Proxmox. OpenStack has no SecureBoot artifact.
func BootArtifact(platform string, secureBoot bool) (string, error) {
	switch {
	case platform == PlatformOpenStack && !secureBoot:
		return ArtifactOpenStack, nil
	case platform == PlatformNoCloud && !secureBoot:
		return ArtifactNoCloudISO, nil
	case platform == PlatformNoCloud:
		return ArtifactNoCloudSecureBootISO, nil
	}
	return "", fmt.Errorf("boot artifact: no %s artifact for platform %q", bootKind(secureBoot), platform)
}

// bootKind names the boot mode in messages.
func bootKind(secureBoot bool) string {
	if secureBoot {
		return "SecureBoot"
	}
	return "BIOS/UEFI"
}

// BootImageName returns the name of the shared boot image for a Talos
// version and schematic: "talos-<version>-<first 12 hex digits of id>", for
// example "talos-v1.14.1-7d4c31cbd96d". It is the Glance image name on
// OpenStack and, through ProxmoxISOName, the ISO file name on Proxmox. The
// reference tool's newest format is unverified; this one embeds the
// version and the schematic id as the reference requires.
func BootImageName(talosVersion, schematicID string) string {
	id := schematicID
	if len(id) > idPrefixLen {
		id = id[:idPrefixLen]
	}
	return "talos-" + talosVersion + "-" + id
}

// LegacyBootImageName returns the boot image name the reference tool used
// before 0.8, "talos-<version>-tailscale". Such an image always baked the
// base schematic (Tailscale + QEMU guest agent), so it stands for
// BaseSchematic at that version.
func LegacyBootImageName(talosVersion string) string {
	return "talos-" + talosVersion + legacySuffix
}

// BootImageCandidates returns the names under which the boot image for
// (talosVersion, schematicID) may already exist, preferred first: the
// current name, then the legacy name when schematicID is the base
// schematic's id (the only schematic legacy images carried).
func BootImageCandidates(talosVersion, schematicID string) ([]string, error) {
	names := []string{BootImageName(talosVersion, schematicID)}
	base, err := BaseSchematic().ID()
	if err != nil {
		return nil, err
	}
	if schematicID == base {
		names = append(names, LegacyBootImageName(talosVersion))
	}
	return names, nil
}

// BootImage is a boot image name taken apart by ParseBootImageName.
type BootImage struct {
	// TalosVersion is the Talos version in the name.
	TalosVersion string
	// SchematicPrefix is the leading hex digits of the schematic id; empty
	// for a legacy name.
	SchematicPrefix string
	// Legacy marks a "talos-<version>-tailscale" name (base schematic).
	Legacy bool
}

// ParseBootImageName recognises a name made by BootImageName or
// LegacyBootImageName, with or without the ".iso" suffix ProxmoxISOName
// adds. It reports false for any other name, so foreign images are left
// alone.
func ParseBootImageName(name string) (BootImage, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(name, ".iso"), "talos-")
	if !ok {
		return BootImage{}, false
	}
	if v, ok := strings.CutSuffix(rest, legacySuffix); ok && v != "" {
		return BootImage{TalosVersion: v, Legacy: true}, true
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 || len(rest)-i-1 != idPrefixLen || !isHex(rest[i+1:]) {
		return BootImage{}, false
	}
	return BootImage{TalosVersion: rest[:i], SchematicPrefix: rest[i+1:]}, true
}

// ProxmoxISOName returns the ISO file name for a boot image name:
// "<name>.iso", with every character outside [A-Za-z0-9._-] replaced by "_"
// (a "+build" version suffix) the way Proxmox normalises download-url file
// names, so the name talosc looks for is the name Proxmox stores.
func ProxmoxISOName(imageName string) string {
	b := []byte(imageName)
	for i, c := range b {
		if !isNameByte(c) {
			b[i] = '_'
		}
	}
	return string(b) + ".iso"
}

// isNameByte reports whether Proxmox keeps c in a file name.
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// isHex reports whether s is non-empty lowercase hex.
func isHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

// RegistryHost returns the container registry host of an Image Factory base
// URL ("https://factory.talos.dev" → "factory.talos.dev"): the factory
// serves installer images from the host of its HTTP API.
func RegistryHost(baseURL string) (string, error) {
	u, err := parseBaseURL(baseURL)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}

// InstallerRef returns the installer image reference
// "<host>/<platform>-installer[-secureboot]/<schematic id>:<talos version>",
// e.g. "factory.talos.dev/openstack-installer/<id>:v1.14.1".
func InstallerRef(host, platform, schematicID, talosVersion string, secureBoot bool) string {
	repo := platform + "-installer"
	if secureBoot {
		repo += "-secureboot"
	}
	return host + "/" + repo + "/" + schematicID + ":" + talosVersion
}

// parseBaseURL validates an Image Factory base URL: http or https, a host,
// no query or fragment. A trailing slash is dropped.
func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("image factory url %q: %w", raw, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("image factory url %q: want http(s)://host[:port][/path], e.g. %s", raw, DefaultBaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("image factory url %q: remove the query, fragment or credentials", raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}
