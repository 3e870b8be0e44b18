package phase

import (
	"bytes"
	"testing"
)

// The validate child's progress reaches the phase's stderr line by line
// as it comes, its ERROR line does not (the phase reports the error once).
func TestWithoutErrors(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := &withoutErrors{w: &out}
	for _, chunk := range []string{"WARNING: sing", "le controlplane\nERROR: refused", "\nlast"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if got := out.String(); got != "WARNING: single controlplane\n" {
		t.Errorf("before flush: %q", got)
	}
	w.flush()
	if got, want := out.String(), "WARNING: single controlplane\nlast"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
