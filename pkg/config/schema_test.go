package config_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/goldentest"
)

// TestJSONSchema_Golden compares the generated schema with
// schema/cluster.schema.json. UPDATE_GOLDEN=1 rewrites the file and still
// fails once, so a rewrite is never mistaken for a pass.
func TestJSONSchema_Golden(t *testing.T) {
	t.Parallel()
	got, err := config.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	goldentest.Assert(t, filepath.Join("..", "..", "schema", "cluster.schema.json"), got)
}

func TestJSONSchema_Shape(t *testing.T) {
	t.Parallel()
	raw, err := config.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		ID         string                     `json:"$id"`
		Title      string                     `json:"title"`
		Props      map[string]json.RawMessage `json:"properties"`
		Additional map[string]any             `json:"additionalProperties"`
		Defs       map[string]struct {
			Additional *bool `json:"additionalProperties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if s.ID != config.SchemaID || s.Title == "" || s.Additional == nil {
		t.Errorf("$id %q title %q additionalProperties %v", s.ID, s.Title, s.Additional)
	}
	var keys []string
	for k := range s.Props {
		keys = append(keys, k)
	}
	want := []string{"backup", "controlplane", "include", "kubernetes", "metal", "name", "network", "openstack", "proxmox", "security", "tags", "tailscale", "talos", "workers"}
	if d := cmp.Diff(want, keys, cmpSorted()); d != "" {
		t.Errorf("top-level properties (-want +got):\n%s", d)
	}
	for name, def := range s.Defs {
		if def.Additional == nil || *def.Additional {
			t.Errorf("$defs/%s must refuse unknown keys (additionalProperties: false)", name)
		}
	}
}
