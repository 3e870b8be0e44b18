package state_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/state"
)

// FuzzParse: no input on stdin panics the state reader, and a document it
// accepts survives a write and a read unchanged: every section, unknown
// ones included, byte for byte, and every section it can decode.
func FuzzParse(f *testing.F) {
	plan, err := os.ReadFile(filepath.Join("testdata", "plan.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(plan)
	f.Add(plan[:len(plan)/2])
	f.Add([]byte(`{"apiVersion":"talosc.dev/v1alpha1","kind":"ClusterState","sections":{"x":{"status":"failed","error":{"message":"m"}}}}`))
	f.Add([]byte(`{"apiVersion":"talosc.dev/v1alpha1","kind":"ClusterState","sections":{"x":null}} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := state.Parse(data)
		if err != nil || d == nil {
			return
		}
		for _, name := range d.Names() {
			_, _, _ = d.Section(name) // may fail, never panic
		}
		var buf bytes.Buffer
		if err := state.Write(&buf, d); err != nil {
			t.Fatalf("a parsed document does not write: %v", err)
		}
		again, err := state.Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("a written document does not parse: %v\n%s", err, buf.Bytes())
		}
		if diff := cmp.Diff(d.Names(), again.Names()); diff != "" {
			t.Fatalf("sections changed in a round trip (-before +after):\n%s", diff)
		}
		for _, name := range d.Names() {
			a, _, aerr := d.Section(name)
			b, _, berr := again.Section(name)
			if (aerr == nil) != (berr == nil) || !cmp.Equal(a, b) {
				t.Fatalf("section %q changed in a round trip: %+v %v -> %+v %v", name, a, aerr, b, berr)
			}
		}
	})
}
