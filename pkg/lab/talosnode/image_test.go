package talosnode_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

func TestParseImage(t *testing.T) {
	t.Parallel()
	const id = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	for _, tc := range []struct {
		ref     string
		want    talosnode.Image
		wantErr bool
	}{
		{ref: "factory.talos.dev/nocloud-installer/" + id + ":v1.14.1", want: talosnode.Image{Version: "v1.14.1", Schematic: id, Platform: "nocloud", Factory: "factory.talos.dev"}},
		{ref: "factory.talos.dev/openstack-installer-secureboot/" + id + ":v1.13.8", want: talosnode.Image{Version: "v1.13.8", Schematic: id, Platform: "openstack", Factory: "factory.talos.dev", SecureBoot: true}},
		{ref: "127.0.0.1:5000/metal-installer/" + id + ":v1.14.0-beta.1", want: talosnode.Image{Version: "v1.14.0-beta.1", Schematic: id, Platform: "metal", Factory: "127.0.0.1:5000"}},
		{ref: "ghcr.io/siderolabs/installer:v1.13.8", want: talosnode.Image{Version: "v1.13.8", Platform: "metal"}},
		{ref: "ghcr.io/siderolabs/installer:latest", wantErr: true},
		{ref: "127.0.0.1:5000/installer", wantErr: true},
		{ref: "", wantErr: true},
	} {
		got, err := talosnode.ParseImage(tc.ref)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseImage(%q) error %v, want error %v", tc.ref, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			continue
		}
		tc.want.Ref = tc.ref
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("ParseImage(%q) (-want +got):\n%s", tc.ref, d)
		}
	}
}
