package lab_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/talos/factory"
)

func TestLabStatusAndKnobs(t *testing.T) {
	t.Parallel()
	l, err := lab.Start(t.Context(), lab.Options{Provider: "openstack"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	control := httptest.NewServer(l.ControlHandler())
	t.Cleanup(control.Close)

	c, err := factory.New(l.Factory.URL, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Versions(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Faults set through the control API reach every service.
	knobs, _ := json.Marshal(labnet.Knobs{ErrorRate: 1})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, control.URL+"/knobs", bytes.NewReader(knobs))
	resp, err := control.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT /knobs: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	if _, err := c.Versions(t.Context()); err == nil {
		t.Fatal("error rate 1 did not fail the call")
	}
	st := l.Status()
	if st.Calls != 2 || st.CallsBy["imagefactory"] != 2 || st.Provider != "openstack" || len(st.Services) == 0 {
		t.Fatalf("status = %+v", st)
	}
}
