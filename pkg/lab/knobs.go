package lab

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// ValidateKnobs refuses fault knobs that mean nothing: a rate outside 0..1,
// rates of exclusive faults (hang, error, lost, late) adding up to more
// than 1, a negative duration, slow answers without a delay, a scripted
// fault both late and after.
func ValidateKnobs(k labnet.Knobs) error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"errorRate", k.ErrorRate}, {"hangRate", k.HangRate}, {"lostRate", k.LostRate}, {"lateRate", k.LateRate}, {"slowRate", k.SlowRate}} {
		if r.v < 0 || r.v > 1 {
			return fmt.Errorf("%s %v: must be between 0 and 1", r.name, r.v)
		}
	}
	if sum := k.HangRate + k.ErrorRate + k.LostRate + k.LateRate; sum > 1 {
		return fmt.Errorf("hangRate + errorRate + lostRate + lateRate = %v: a request gets one of these faults at most, so they add up to 1 at most", sum)
	}
	if k.Latency < 0 || k.Slow < 0 || k.LateBy < 0 {
		return fmt.Errorf("latency %v, slow %v, lateBy %v: durations cannot be negative", k.Latency, k.Slow, k.LateBy)
	}
	if k.SlowRate > 0 && k.Slow == 0 {
		return fmt.Errorf("slowRate %v without slow: say how late a slow answer comes (e.g. \"slow\": \"25s\")", k.SlowRate)
	}
	for i, f := range k.Faults {
		if f.Late && f.After {
			return fmt.Errorf("faults[%d] (%s %s %s): late and after exclude each other: after applies the request before its answer is lost, late after; keep one", i, f.Service, f.Method, f.PathPrefix)
		}
	}
	return nil
}

// knobsWire is labnet.Knobs as PUT /knobs reads it: latency, slow and
// lateBy are Go durations ("25s") or nanoseconds.
type knobsWire struct {
	labnet.Knobs
	Latency any `json:"latency,omitempty"`
	Slow    any `json:"slow,omitempty"`
	LateBy  any `json:"lateBy,omitempty"`
}

// readKnobs reads and validates the knobs of a PUT /knobs; false: it
// answered 400.
func readKnobs(w http.ResponseWriter, r *http.Request) (labnet.Knobs, bool) {
	var wire knobsWire
	if !readJSON(w, r, "knobs", &wire) {
		return labnet.Knobs{}, false
	}
	k := wire.Knobs
	var err error
	if k.Latency, err = duration("latency", wire.Latency); err == nil {
		k.Slow, err = duration("slow", wire.Slow)
	}
	if err == nil {
		k.LateBy, err = duration("lateBy", wire.LateBy)
	}
	if err == nil {
		err = ValidateKnobs(k)
	}
	if err != nil {
		http.Error(w, "knobs: "+err.Error(), http.StatusBadRequest)
		return labnet.Knobs{}, false
	}
	return k, true
}

// duration reads a JSON duration: a string time.ParseDuration takes, or a
// number of nanoseconds.
func duration(name string, v any) (time.Duration, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case float64:
		return time.Duration(x), nil
	case string:
		d, err := time.ParseDuration(x)
		if err != nil {
			return 0, fmt.Errorf("%s %q: want a duration like \"25s\"", name, x)
		}
		return d, nil
	}
	return 0, fmt.Errorf("%s %s: want a duration like \"25s\" or nanoseconds", name, mustJSON(v))
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
