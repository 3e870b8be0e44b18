package factory_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/imagefactory"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// TestCreateSchematic_AnswerLost: a schematic POST the factory carried out
// but whose answer was lost (502, 504, a reset, no answer before the
// client's timeout) is sent again and gets the schematic's id: the POST is
// content-addressed, so the factory holds the schematic once. An error
// answer is not asked again.
func TestCreateSchematic_AnswerLost(t *testing.T) {
	t.Parallel()
	for _, lost := range []labnet.Fault{{Status: http.StatusBadGateway}, {Status: http.StatusGatewayTimeout}, {Reset: true}, {Hang: true}, {Status: http.StatusBadRequest}} {
		lost.Service, lost.Method, lost.PathPrefix, lost.Nth, lost.After = imagefactory.Service, http.MethodPost, "/schematics", 1, true
		inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{lost}})
		f, err := imagefactory.Start(t.Context(), imagefactory.Options{Injector: inj, Recorder: &labnet.Recorder{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		c := newClient(t, f.URL, &http.Client{}, factory.Options{Timeout: 300 * time.Millisecond})
		id, err := c.CreateSchematic(t.Context(), factory.BaseSchematic())
		posts := 0
		for _, call := range f.Recorder().Calls() {
			if call.Method == http.MethodPost {
				posts++
			}
		}
		if lost.Status == http.StatusBadRequest {
			if err == nil || posts != 1 {
				t.Errorf("an answer of 400: %q, %v after %d POSTs; want the error, after one", id, err, posts)
			}
			continue
		}
		if err != nil || id != baseID || posts != 2 {
			t.Errorf("lost %+v: %q, %v after %d POSTs; want %s after 2", lost, id, err, posts, baseID)
		}
		if n := len(f.Schematics()); n != 1 {
			t.Errorf("lost %+v: the factory holds %d schematics, want 1", lost, n)
		}
	}
}
