package factory_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// schematicExts compares schematics by their extension sets.
func schematicExts() cmp.Option {
	return cmp.Transformer("extensions", factory.Schematic.Extensions)
}

func TestInstallers_IdenticalSetsShareOneImage(t *testing.T) {
	t.Parallel()
	cfg := cluster(nil, nil,
		pool("general"),
		pool("storage", "siderolabs/iscsi-tools"),
		pool("db", "siderolabs/iscsi-tools", factory.ExtensionQEMUGuestAgent),
	)
	plan, err := factory.Installers(cfg, factory.InstallerOptions{Host: "factory.talos.dev", Platform: factory.PlatformOpenStack})
	if err != nil {
		t.Fatal(err)
	}
	iscsi := factory.SchematicFor([]string{"siderolabs/iscsi-tools", factory.ExtensionQEMUGuestAgent})
	iscsiID, err := iscsi.ID()
	if err != nil {
		t.Fatal(err)
	}
	plainRef := "factory.talos.dev/openstack-installer/" + guestAgentID + ":v1.14.1"
	iscsiRef := "factory.talos.dev/openstack-installer/" + iscsiID + ":v1.14.1"
	want := &factory.InstallerPlan{
		ByPool: map[string]string{"controlplane": plainRef, "general": plainRef, "storage": iscsiRef, "db": iscsiRef},
		Installers: []factory.Installer{
			{
				Schematic: factory.SchematicFor([]string{factory.ExtensionQEMUGuestAgent}), SchematicID: guestAgentID,
				Ref: plainRef, Pools: []string{"controlplane", "general"},
			},
			{Schematic: iscsi, SchematicID: iscsiID, Ref: iscsiRef, Pools: []string{"storage", "db"}},
		},
	}
	if diff := cmp.Diff(want, plan, schematicExts()); diff != "" {
		t.Errorf("Installers (-want +got):\n%s", diff)
	}
	if got := len(plan.Schematics()); got != 2 {
		t.Errorf("Schematics() has %d entries, want 2", got)
	}
}

func TestInstallers_TailscaleSectionSelectsBaseSchematic(t *testing.T) {
	t.Parallel()
	plan, err := factory.Installers(cluster(&config.Tailscale{}, nil),
		factory.InstallerOptions{Host: "127.0.0.1:9000", Platform: factory.PlatformNoCloud, SecureBoot: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"controlplane": "127.0.0.1:9000/nocloud-installer-secureboot/" + baseID + ":v1.14.1"}
	if diff := cmp.Diff(want, plan.ByPool); diff != "" {
		t.Errorf("ByPool (-want +got):\n%s", diff)
	}
}

func TestInstallers_Refusals(t *testing.T) {
	t.Parallel()
	ok := factory.InstallerOptions{Host: "factory.talos.dev", Platform: factory.PlatformOpenStack}
	noVersion := cluster(nil, nil)
	noVersion.Talos.Version = ""
	tests := []struct {
		name string
		cfg  *config.Cluster
		opts factory.InstallerOptions
		want string
	}{
		{"no host", cluster(nil, nil), factory.InstallerOptions{Platform: factory.PlatformOpenStack}, "registry host"},
		{"no platform", cluster(nil, nil), factory.InstallerOptions{Host: "factory.talos.dev"}, "platform"},
		{"no talos version", noVersion, ok, "talos.version is not set"},
		{"no config", nil, ok, "talos.version is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := factory.Installers(tc.cfg, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Installers error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
