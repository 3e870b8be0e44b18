package schema_test

import (
	"encoding/json"
	"testing"

	"github.com/invopop/jsonschema"

	"github.com/talosc/talosc/pkg/goldentest"
	"github.com/talosc/talosc/pkg/planfile"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/schema"
)

// stateSchema generates the state document's schema from the Go types.
func stateSchema(t *testing.T) []byte {
	t.Helper()
	return generate(t, &state.Document{}, "state", "talosc state document", "The JSON document talosc phases and plugins exchange on stdin/stdout during one run.")
}

// planSchema generates the plan document's schema from the Go types.
func planSchema(t *testing.T) []byte {
	t.Helper()
	return generate(t, &planfile.Document{}, "plan", "talosc plan document", "A whole run's plan: what kubectl talosc plan -o json prints and plan --out saves for converge --plan.")
}

// checkSchema generates the check report's schema from the Go types.
func checkSchema(t *testing.T) []byte {
	t.Helper()
	return generate(t, &report.CheckReport{}, "check", "talosc check report", "What kubectl talosc check -o json prints: versions, drift, cordons, plugins, certificate expiry, orphans and why the check is incomplete.")
}

func generate(t *testing.T, v any, name, title, description string) []byte {
	t.Helper()
	r := &jsonschema.Reflector{DoNotReference: true, RequiredFromJSONSchemaTags: false}
	s := r.Reflect(v)
	s.ID = jsonschema.ID("https://talosc.dev/schema/" + name + ".schema.json")
	s.Title = title + " (" + state.APIVersion + ")"
	s.Description = description
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

func TestPlanSchemaGolden(t *testing.T) {
	t.Parallel()
	goldentest.Assert(t, "plan.schema.json", planSchema(t))
	if got := planSchema(t); string(got) != string(schema.Plan()) {
		t.Fatalf("the embedded plan.schema.json is stale; rebuild after UPDATE_GOLDEN=1 go test ./schema")
	}
}

func TestCheckSchemaGolden(t *testing.T) {
	t.Parallel()
	goldentest.Assert(t, "check.schema.json", checkSchema(t))
	if got := checkSchema(t); string(got) != string(schema.Check()) {
		t.Fatalf("the embedded check.schema.json is stale; rebuild after UPDATE_GOLDEN=1 go test ./schema")
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
