package inventory_test

import (
	"slices"
	"testing"

	"github.com/talosc/talosc/pkg/lab/inventory"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	var b inventory.Builder
	b.Add("network", "demo", inventory.List("tags", []string{"managed-by=taloscluster", "cluster=demo"}))
	b.Add("volume", "", inventory.A("size", 1), inventory.A("bootable", false), inventory.A("description", "a b"))
	b.Add("network", "demo", inventory.Map("m", map[string]string{"b": "2", "a": "1"}))
	was := b.Snapshot()
	want := inventory.Snapshot{
		"network demo m=a:1|b:2",
		"network demo tags=cluster=demo,managed-by=taloscluster",
		`volume - size=1 description="a b"`,
	}
	if !slices.Equal(was, want) {
		t.Fatalf("snapshot %q, want %q", was, want)
	}
	for _, tc := range []struct {
		name string
		now  inventory.Snapshot
		want []string
	}{
		{"same", slices.Clone(was), nil},
		{"a duplicate is a line more", append(slices.Clone(was), "network demo m=a:1|b:2"), []string{"+ network demo m=a:1|b:2"}},
		{"gone", was[1:], []string{"- network demo m=a:1|b:2"}},
		{"changed", inventory.Snapshot{was[0], "network demo tags=cluster=demo", was[2]}, []string{
			"+ network demo tags=cluster=demo", "- network demo tags=cluster=demo,managed-by=taloscluster",
		}},
		{"read back from text", inventory.Parse("# golden\n\n" + was.String()), nil},
	} {
		if got := inventory.Diff(was, tc.now); !slices.Equal(got, tc.want) {
			t.Errorf("%s: diff %q, want %q", tc.name, got, tc.want)
		}
	}
}
