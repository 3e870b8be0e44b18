// Package schema publishes the JSON Schemas of cluster.yaml and of the state
// document, of the plan document and of the check report, so editors can complete cluster.yaml (yaml-language-server) and
// plugin authors can validate what they read and write. The files are
// generated from the Go types and golden-tested; UPDATE_GOLDEN=1 rewrites them.
package schema

import _ "embed" // the schemas are embedded files

//go:embed cluster.schema.json
var cluster []byte

//go:embed state.schema.json
var stateDoc []byte

//go:embed plan.schema.json
var planDoc []byte

// Cluster returns the JSON Schema of cluster.yaml.
func Cluster() []byte { return cluster }

// State returns the JSON Schema of the state document.
func State() []byte { return stateDoc }

// Plan returns the JSON Schema of the plan document (plan -o json, plan --out).
func Plan() []byte { return planDoc }

//go:embed check.schema.json
var checkDoc []byte

// Check returns the JSON Schema of the check report (check -o json).
func Check() []byte { return checkDoc }
