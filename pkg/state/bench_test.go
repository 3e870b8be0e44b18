package state_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/talosc/talosc/pkg/state"
)

// BenchmarkPassThrough measures what every phase and plugin does to a
// document on its way through a pipe: parse, replace its own section, write.
// The document carries 50 sections of 100 changes each (a large cluster).
func BenchmarkPassThrough(b *testing.B) {
	doc := state.New("bench", "plan")
	for i := range 50 {
		sec := state.Section{Status: state.StatusPlanned, Producer: "tc-bench/v0"}
		for j := range 100 {
			sec.Plan = append(sec.Plan, state.Change{Action: state.ActionCreate, Kind: "openstack:port", Name: fmt.Sprintf("bench-worker-%02d-%03d", i, j)})
		}
		if err := doc.Put(fmt.Sprintf("section-%02d", i), sec); err != nil {
			b.Fatal(err)
		}
	}
	var in bytes.Buffer
	if err := state.Write(&in, doc); err != nil {
		b.Fatal(err)
	}
	data := in.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := state.Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Put("section-07", state.Section{Status: state.StatusSucceeded, Producer: "tc-bench/v0"}); err != nil {
			b.Fatal(err)
		}
		if err := state.Write(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
}
