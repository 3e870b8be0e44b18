package schema_test

import (
	"encoding/json"
	"testing"

	"github.com/invopop/jsonschema"

	"github.com/talosc/talosc/pkg/goldentest"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/schema"
)

// stateSchema generates the state document's schema from the Go types.
func stateSchema(t *testing.T) []byte {
	t.Helper()
	r := &jsonschema.Reflector{DoNotReference: true, RequiredFromJSONSchemaTags: false}
	s := r.Reflect(&state.Document{})
	s.ID = "https://talosc.dev/schema/state.schema.json"
	s.Title = "talosc state document (" + state.APIVersion + ")"
	s.Description = "The JSON document talosc phases and plugins exchange on stdin/stdout during one run."
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}

func TestStateSchemaGolden(t *testing.T) {
	t.Parallel()
	goldentest.Assert(t, "state.schema.json", stateSchema(t))
	if got := stateSchema(t); string(got) != string(schema.State()) {
		t.Fatalf("the embedded state.schema.json is stale; rebuild after UPDATE_GOLDEN=1 go test ./schema")
	}
}

func TestClusterSchemaIsJSON(t *testing.T) {
	t.Parallel()
	var v map[string]any
	if err := json.Unmarshal(schema.Cluster(), &v); err != nil {
		t.Fatalf("cluster.schema.json: %v", err)
	}
	if v["$schema"] == nil || v["properties"] == nil {
		t.Fatalf("cluster.schema.json lacks $schema or properties")
	}
}
