// Package reporttest reads check's textfile back with Prometheus' own text
// parser (expfmt), for tests of the metrics and for the e2e scripts.
package reporttest

import (
	"fmt"
	"io"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Samples are the parsed samples by series: `name{a="x",b="y"}` with the
// labels sorted by name and the values unescaped.
type Samples map[string]float64

// Parse parses a textfile with expfmt's TextParser and checks what
// node-exporter's textfile collector needs: every family is a gauge with
// HELP, and no series repeats.
func Parse(r io.Reader) (Samples, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := Samples{}
	for name, f := range families {
		if f.GetType() != dto.MetricType_GAUGE || f.GetHelp() == "" {
			return nil, fmt.Errorf("%s: type %s, help %q: want a gauge with help", name, f.GetType(), f.GetHelp())
		}
		for _, m := range f.GetMetric() {
			key := Key(name, labels(m)...)
			if _, dup := out[key]; dup {
				return nil, fmt.Errorf("series %s repeats", key)
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out, nil
}

func labels(m *dto.Metric) []string {
	var out []string
	for _, l := range m.GetLabel() {
		out = append(out, l.GetName(), l.GetValue())
	}
	return out
}

// Key names a series: name and label pairs (name, value, ...), the labels
// sorted by name.
func Key(name string, pairs ...string) string {
	var ls []string
	for i := 0; i+1 < len(pairs); i += 2 {
		ls = append(ls, fmt.Sprintf("%s=%q", pairs[i], pairs[i+1]))
	}
	slices.Sort(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}
