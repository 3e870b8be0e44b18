package state_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/state"
)

func TestRoundTripKeepsForeignSections(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile("testdata/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := state.Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Put("net", state.Section{Status: state.StatusPlanned, Producer: "tc-net/test"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := state.Write(&out, doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "}\n") || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("want one newline-terminated line, got %q", out.String())
	}
	again, err := state.Parse(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	// The section written by a newer producer, with fields this build does
	// not know, survives unchanged.
	var before, after map[string]any
	if err := json.Unmarshal(doc.Sections["argocd"], &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again.Sections["argocd"], &after); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Fatalf("foreign section changed (-before +after):\n%s", diff)
	}
	if _, ok := after["futureField"]; !ok {
		t.Fatal("unknown field of a foreign section was dropped")
	}
	if got := state.ChangedOtherThan(doc, again, "net"); len(got) != 0 {
		t.Fatalf("ChangedOtherThan = %v, want none", got)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, wantErr string
		wantNil           bool
	}{
		{name: "empty starts a new document", in: "", wantNil: true},
		{name: "whitespace starts a new document", in: " \n\t", wantNil: true},
		{name: "not json", in: "hello", wantErr: "not a talosc state document"},
		{name: "two documents", in: `{"apiVersion":"talosc.dev/v1alpha1","kind":"ClusterState","sections":{}} {}`, wantErr: "more than one"},
		{name: "other version", in: `{"apiVersion":"talosc.dev/v2","kind":"ClusterState"}`, wantErr: `apiVersion "talosc.dev/v2"`},
		{name: "other kind", in: `{"apiVersion":"talosc.dev/v1alpha1","kind":"Other"}`, wantErr: `kind "Other"`},
		{name: "no sections", in: `{"apiVersion":"talosc.dev/v1alpha1","kind":"ClusterState","cluster":"x"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := state.Parse([]byte(tc.in))
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case tc.wantNil != (doc == nil):
				t.Fatalf("doc = %v, want nil: %v", doc, tc.wantNil)
			case doc != nil && doc.Sections == nil:
				t.Fatal("Sections is nil")
			}
		})
	}
	_, err := state.Parse([]byte(`{"apiVersion":"x","kind":"y"}`))
	if _, ok := errors.AsType[*state.VersionError](err); !ok {
		t.Fatalf("want *VersionError, got %T", err)
	}
}

func TestNamesFailedAndOutputs(t *testing.T) {
	t.Parallel()
	doc := state.New("demo", "converge")
	doc.Sections["zz-foreign"] = json.RawMessage(`{"status":"failed","producer":"x"}`)
	doc.Sections["aa-foreign"] = json.RawMessage(`{"status":"succeeded","producer":"x"}`)
	img := state.Section{Status: state.StatusSucceeded, Producer: "tc-image/test"}
	if err := img.SetOutputs(map[string]string{"bootImage": "talos-abc"}); err != nil {
		t.Fatal(err)
	}
	var net state.Section
	net.Producer = "tc-net/test"
	net.Fail(errors.New("boom"))
	for name, s := range map[string]state.Section{"image": img} {
		if err := doc.Put(name, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := doc.Put("net", net); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"image", "net", "aa-foreign", "zz-foreign"}, doc.Names()); diff != "" {
		t.Fatalf("Names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"net", "zz-foreign"}, doc.Failed()); diff != "" {
		t.Fatalf("Failed (-want +got):\n%s", diff)
	}
	out, ok, err := state.Outputs[map[string]string](doc, "image")
	if err != nil || !ok || out["bootImage"] != "talos-abc" {
		t.Fatalf("Outputs = %v %v %v", out, ok, err)
	}
	if _, ok, _ := state.Outputs[map[string]string](doc, "nodes"); ok {
		t.Fatal("absent section reported present")
	}
	// Re-putting a section moves it to the end of the write order.
	if err := doc.Put("image", img); err != nil {
		t.Fatal(err)
	}
	if got := doc.Names()[:2]; got[0] != "net" || got[1] != "image" {
		t.Fatalf("order after re-put = %v", got)
	}
}

func TestChangedOtherThan(t *testing.T) {
	t.Parallel()
	before := state.New("demo", "converge")
	before.Sections["net"] = json.RawMessage(`{"status":"succeeded", "producer":"tc-net"}`)
	before.Sections["gone"] = json.RawMessage(`{}`)
	after := state.New("demo", "converge")
	after.Sections["net"] = json.RawMessage(`{"status":"succeeded","producer":"tc-net"}`) // whitespace only
	after.Sections["mine"] = json.RawMessage(`{"status":"succeeded"}`)
	after.Sections["added"] = json.RawMessage(`{}`)
	if diff := cmp.Diff([]string{"added", "gone"}, state.ChangedOtherThan(before, after, "mine")); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
