package rancher_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/rancher"
)

// TestLostAnswerWasApplied: a cluster import whose answer is lost (502
// after the handler ran) was made all the same, and the recorder marks the
// call as lost.
func TestLostAnswerWasApplied(t *testing.T) {
	t.Parallel()
	rec := &labnet.Recorder{}
	inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{
		{Service: rancher.Service, Method: http.MethodPost, PathPrefix: "/v3/clusters", Nth: 1, Status: http.StatusBadGateway, After: true},
	}})
	o := labUsers()
	o.Injector, o.Recorder = inj, rec
	s := start(t, o)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/v3/clusters", bytes.NewReader([]byte(`{"type":"cluster","name":"lost"}`)))
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("create: %d, want the injected 502", resp.StatusCode)
	}
	_, coll := api(t, s, http.MethodGet, "/v3/clusters?name=lost", nil)
	if rows := data(t, coll); len(rows) != 1 || rows[0]["name"] != "lost" {
		t.Errorf("the import whose answer was lost was not applied: %v", rows)
	}
	calls := rec.Calls()
	if c := calls[0]; c.Method != http.MethodPost || c.Status != http.StatusBadGateway || !c.Lost {
		t.Errorf("recorded %+v, want the POST recorded as lost", c)
	}
}
