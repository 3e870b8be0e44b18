package factory_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// Known schematic ids.
const (
	// emptyID is the id of the schematic without customisation, as published
	// by the Image Factory (and verified against it).
	emptyID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
	// guestAgentID is siderolabs/qemu-guest-agent alone, verified against
	// factory.talos.dev.
	guestAgentID = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	// baseID is the boot image's schematic (qemu-guest-agent + tailscale).
	// Obtained once with image-factory v1.4.0's schematic.Schematic.ID(),
	// cross-checked with `printf 'customization:\n    systemExtensions:\n
	// officialExtensions:\n ...' | sha256sum`, and it is the id public
	// repositories use for factory.talos.dev/installer/<id> with exactly
	// these two extensions.
	baseID = "7d4c31cbd96db9f90c874990697c523482b2bae27fb4631d5583dcd9c281b1ff"
)

func TestSchematicID_KnownIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    factory.Schematic
		want string
	}{
		{"zero value is the empty schematic", factory.Schematic{}, emptyID},
		{"no extensions", factory.SchematicFor(nil), emptyID},
		{"qemu-guest-agent only", factory.SchematicFor([]string{factory.ExtensionQEMUGuestAgent}), guestAgentID},
		{"base schematic", factory.BaseSchematic(), baseID},
		{"base set in any order with duplicates", factory.SchematicFor([]string{
			" siderolabs/tailscale", "siderolabs/qemu-guest-agent", "siderolabs/tailscale", "",
		}), baseID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.s.ID()
			if err != nil {
				t.Fatalf("ID: %v", err)
			}
			if got != tc.want {
				t.Errorf("ID = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSchematicMarshal_IsFactoryYAML(t *testing.T) {
	t.Parallel()
	got, err := factory.BaseSchematic().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := "customization:\n    systemExtensions:\n        officialExtensions:\n" +
		"            - siderolabs/qemu-guest-agent\n            - siderolabs/tailscale\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Marshal (-want +got):\n%s", diff)
	}
}

func TestSchematicFor_CopiesInputAndOutput(t *testing.T) {
	t.Parallel()
	in := []string{"siderolabs/b", "siderolabs/a"}
	s := factory.SchematicFor(in)
	if diff := cmp.Diff([]string{"siderolabs/b", "siderolabs/a"}, in); diff != "" {
		t.Errorf("input modified (-want +got):\n%s", diff)
	}
	out := s.Extensions()
	out[0] = "changed"
	if diff := cmp.Diff([]string{"siderolabs/a", "siderolabs/b"}, s.Extensions()); diff != "" {
		t.Errorf("Extensions aliases the schematic (-want +got):\n%s", diff)
	}
}

// cluster returns a minimal validated-looking cluster with the given
// tailscale section, cluster extensions and worker pools.
func cluster(ts *config.Tailscale, exts []string, workers ...config.Pool) *config.Cluster {
	return &config.Cluster{
		Name:         "demo",
		Talos:        config.Talos{Version: "v1.14.1", Extensions: exts},
		ControlPlane: config.Pool{Name: "controlplane", Count: 3},
		Workers:      workers,
		Tailscale:    ts,
	}
}

// pool returns a worker pool with extensions.
func pool(name string, exts ...string) config.Pool {
	return config.Pool{Name: name, Count: 1, Extensions: exts}
}

func TestExtensionSet(t *testing.T) {
	t.Parallel()
	const (
		qga   = factory.ExtensionQEMUGuestAgent
		ts    = factory.ExtensionTailscale
		iscsi = "siderolabs/iscsi-tools"
		nvidi = "siderolabs/nvidia-container-toolkit"
	)
	tests := []struct {
		name string
		cfg  *config.Cluster
		pool string
		want []string
	}{
		{"no tailscale section drops tailscale", cluster(nil, nil), "controlplane", []string{qga}},
		{"empty tailscale section keeps it", cluster(&config.Tailscale{}, nil), "controlplane", []string{qga, ts}},
		{"keyed tailscale section keeps it", cluster(&config.Tailscale{AuthKey: "tskey-x"}, nil), "controlplane", []string{qga, ts}},
		{"explicit tailscale in talos.extensions keeps it", cluster(nil, []string{ts}), "controlplane", []string{qga, ts}},
		{"explicit tailscale in a pool keeps it there", cluster(nil, nil, pool("edge", ts)), "edge", []string{qga, ts}},
		{"cluster extensions merge, sorted", cluster(nil, []string{iscsi}), "controlplane", []string{iscsi, qga}},
		{
			"pool extensions merge with cluster ones", cluster(&config.Tailscale{}, []string{iscsi}, pool("gpu", nvidi)), "gpu",
			[]string{iscsi, nvidi, qga, ts},
		},
		{"control-plane pool extensions", func() *config.Cluster {
			c := cluster(nil, nil, pool("gpu", nvidi))
			c.ControlPlane.Extensions = []string{iscsi}
			return c
		}(), "controlplane", []string{iscsi, qga}},
		{"other pools' extensions stay out", cluster(nil, nil, pool("gpu", nvidi)), "controlplane", []string{qga}},
		{
			"duplicates across levels collapse", cluster(&config.Tailscale{}, []string{qga, iscsi, ts}, pool("gpu", iscsi, iscsi, qga)), "gpu",
			[]string{iscsi, qga, ts},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := factory.ExtensionSet(tc.cfg, tc.pool)
			if err != nil {
				t.Fatalf("ExtensionSet: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ExtensionSet (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtensionSet_UnknownPoolRefused(t *testing.T) {
	t.Parallel()
	_, err := factory.ExtensionSet(cluster(nil, nil, pool("gpu")), "gpus")
	if err == nil || !strings.Contains(err.Error(), `pool "gpus" is neither "controlplane" nor a worker pool of cluster "demo"`) {
		t.Errorf("ExtensionSet(unknown pool) error = %v", err)
	}
	if _, err := factory.ExtensionSet(nil, "controlplane"); err == nil {
		t.Error("ExtensionSet(nil config) succeeded")
	}
}
