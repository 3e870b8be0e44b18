package factory_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/factory"
)

func TestBootImageName(t *testing.T) {
	t.Parallel()
	if got, want := factory.BootImageName("v1.14.1", baseID), "talos-v1.14.1-7d4c31cbd96d"; got != want {
		t.Errorf("BootImageName = %q, want %q", got, want)
	}
	if got, want := factory.LegacyBootImageName("v1.14.1"), "talos-v1.14.1-tailscale"; got != want {
		t.Errorf("LegacyBootImageName = %q, want %q", got, want)
	}
	if got, want := factory.ProxmoxISOName("talos-v1.14.1-7d4c31cbd96d"), "talos-v1.14.1-7d4c31cbd96d.iso"; got != want {
		t.Errorf("ProxmoxISOName = %q, want %q", got, want)
	}
	// Proxmox normalises download-url file names to [A-Za-z0-9._-].
	if got, want := factory.ProxmoxISOName("talos-v1.14.1+build.5-7d4c31cbd96d"), "talos-v1.14.1_build.5-7d4c31cbd96d.iso"; got != want {
		t.Errorf("ProxmoxISOName(+build) = %q, want %q", got, want)
	}
}

func TestBootImageCandidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		want []string
	}{
		{"base schematic also matches the legacy name", baseID, []string{"talos-v1.13.2-7d4c31cbd96d", "talos-v1.13.2-tailscale"}},
		{"other schematics have no legacy name", guestAgentID, []string{"talos-v1.13.2-ce4c980550dd"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := factory.BootImageCandidates("v1.13.2", tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("BootImageCandidates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseBootImageName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		want   factory.BootImage
		wantOK bool
	}{
		{"talos-v1.14.1-7d4c31cbd96d", factory.BootImage{TalosVersion: "v1.14.1", SchematicPrefix: "7d4c31cbd96d"}, true},
		{"talos-v1.14.1-7d4c31cbd96d.iso", factory.BootImage{TalosVersion: "v1.14.1", SchematicPrefix: "7d4c31cbd96d"}, true},
		{"talos-v1.15.0-beta.1-ce4c980550dd", factory.BootImage{TalosVersion: "v1.15.0-beta.1", SchematicPrefix: "ce4c980550dd"}, true},
		{"talos-v1.13.0-tailscale", factory.BootImage{TalosVersion: "v1.13.0", Legacy: true}, true},
		{"talos-v1.13.0-tailscale.iso", factory.BootImage{TalosVersion: "v1.13.0", Legacy: true}, true},
		{"talos-v1.14.1-7D4C31CBD96D", factory.BootImage{}, false},
		{"talos-v1.14.1-7d4c31cbd9", factory.BootImage{}, false},
		{"talos--tailscale", factory.BootImage{}, false},
		{"talos-7d4c31cbd96d", factory.BootImage{}, false},
		{"ubuntu-24.04", factory.BootImage{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := factory.ParseBootImageName(tc.name)
			if ok != tc.wantOK {
				t.Fatalf("ParseBootImageName ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseBootImageName (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseBootImageName_RoundTrip(t *testing.T) {
	t.Parallel()
	name := factory.BootImageName("v1.14.1", guestAgentID)
	got, ok := factory.ParseBootImageName(factory.ProxmoxISOName(name))
	if !ok || got.TalosVersion != "v1.14.1" || got.SchematicPrefix != guestAgentID[:12] {
		t.Errorf("ParseBootImageName(ProxmoxISOName(%q)) = %+v, %v", name, got, ok)
	}
}

func TestInstallerRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		platform   string
		secureBoot bool
		want       string
	}{
		{factory.PlatformOpenStack, false, "factory.talos.dev/openstack-installer/" + baseID + ":v1.14.1"},
		{factory.PlatformNoCloud, false, "factory.talos.dev/nocloud-installer/" + baseID + ":v1.14.1"},
		{factory.PlatformNoCloud, true, "factory.talos.dev/nocloud-installer-secureboot/" + baseID + ":v1.14.1"},
	}
	for _, tc := range tests {
		if got := factory.InstallerRef("factory.talos.dev", tc.platform, baseID, "v1.14.1", tc.secureBoot); got != tc.want {
			t.Errorf("InstallerRef(%s, secureboot=%v) = %q, want %q", tc.platform, tc.secureBoot, got, tc.want)
		}
	}
}

func TestRegistryHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url, want string
		wantErr   bool
	}{
		{factory.DefaultBaseURL, "factory.talos.dev", false},
		{"https://factory.talos.dev/", "factory.talos.dev", false},
		{"http://127.0.0.1:8080/mirror", "127.0.0.1:8080", false},
		{"factory.talos.dev", "", true},
		{"ftp://factory.talos.dev", "", true},
		{"https://factory.talos.dev/?x=1", "", true},
		{"https://user:pw@factory.talos.dev", "", true},
		{"https://", "", true},
	}
	for _, tc := range tests {
		got, err := factory.RegistryHost(tc.url)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("RegistryHost(%q) = %q, %v; want %q, error %v", tc.url, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestPlatformAndBootArtifact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider   string
		secureBoot bool
		platform   string
		artifact   string
	}{
		{config.ProviderOpenStack, false, "openstack", "openstack-amd64.raw.xz"},
		{config.ProviderProxmox, false, "nocloud", "nocloud-amd64.iso"},
		{config.ProviderProxmox, true, "nocloud", "nocloud-amd64-secureboot.iso"},
	}
	for _, tc := range tests {
		platform, err := factory.PlatformFor(tc.provider)
		if err != nil || platform != tc.platform {
			t.Errorf("PlatformFor(%q) = %q, %v; want %q", tc.provider, platform, err, tc.platform)
			continue
		}
		artifact, err := factory.BootArtifact(platform, tc.secureBoot)
		if err != nil || artifact != tc.artifact {
			t.Errorf("BootArtifact(%q, %v) = %q, %v; want %q", platform, tc.secureBoot, artifact, err, tc.artifact)
		}
	}
	if _, err := factory.PlatformFor("vsphere"); err == nil {
		t.Error("PlatformFor(vsphere) succeeded")
	}
	if _, err := factory.BootArtifact(factory.PlatformOpenStack, true); err == nil {
		t.Error("BootArtifact(openstack, secureboot) succeeded")
	}
}
