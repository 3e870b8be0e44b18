package config

import (
	"encoding/json"
	"net/netip"
	"reflect"

	"github.com/invopop/jsonschema"
)

// SchemaID is the $id of the cluster.yaml JSON Schema (schema/cluster.schema.json).
const SchemaID = "https://raw.githubusercontent.com/talosc/talosc/main/schema/cluster.schema.json"

const schemaDescription = "Schema of talosc's cluster.yaml and of every file it includes " +
	"(secrets.yaml, ...). It checks shapes only: keys that are required, and rules that " +
	"span keys or files, are checked by the loader after the files are merged, since any " +
	"key may live in any included file. An explicit null is the same as an absent key. " +
	"Top-level keys other than the listed ones are plugin sections (open objects); the " +
	"loader refuses them unless an installed plugin declares them."

// JSONSchema returns the JSON Schema of cluster.yaml, generated from the
// Cluster types: unknown keys are refused (additionalProperties: false)
// wherever the loader is strict; the top level stays open for plugin sections.
func JSONSchema() ([]byte, error) {
	r := &jsonschema.Reflector{
		FieldNameTag:               "yaml",
		RequiredFromJSONSchemaTags: true,
		ExpandedStruct:             true,
		Mapper:                     schemaFor,
	}
	s := r.Reflect(&Cluster{})
	s.ID = SchemaID
	s.Title = "talosc cluster.yaml"
	s.Description = schemaDescription
	if def, ok := s.Definitions["Network"]; ok {
		if dns, ok := def.Properties.Get("dns"); ok {
			dns.Items = &jsonschema.Schema{Type: "string", Description: "IPv4 or IPv6 address"}
		}
	}
	if cp, ok := s.Properties.Get("controlplane"); ok {
		// The control plane shares the Pool shape but refuses
		// max_unavailable, as the loader does.
		cp.Properties = jsonschema.NewProperties()
		cp.Properties.Set("max_unavailable", &jsonschema.Schema{
			Type:        "null",
			Description: "Not allowed on the control plane: control planes are always upgraded one at a time.",
		})
	}
	s.Properties.Set("metal", &jsonschema.Schema{
		Type:        "null",
		Description: "Bare-metal machines are not supported yet by talosc; the loader refuses a metal section.",
	})
	loosen(s)
	for _, def := range s.Definitions {
		loosen(def)
	}
	s.AdditionalProperties = &jsonschema.Schema{
		Description: "A plugin section (e.g. rancher, argocd, charts), accepted when an installed plugin declares it.",
		AnyOf:       []*jsonschema.Schema{{Type: "object"}, {Type: "null"}},
	}
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// schemaFor maps the types whose YAML shape is not their Go shape.
func schemaFor(t reflect.Type) *jsonschema.Schema {
	str := func(pattern, desc string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "string", Pattern: pattern, Description: desc}
	}
	const ipv4 = `[0-9]{1,3}(\.[0-9]{1,3}){3}`
	switch t {
	case reflect.TypeFor[netip.Addr]():
		return str("^"+ipv4+"$", "IPv4 address")
	case reflect.TypeFor[netip.Prefix]():
		return str("^"+ipv4+"(/[0-9]{1,2})?$", "IPv4 network, CIDR notation")
	case reflect.TypeFor[AddrRange]():
		return str(`^\s*`+ipv4+`\s*-\s*`+ipv4+`\s*$`, "IPv4 range start-end")
	case reflect.TypeFor[TLSVerify]():
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "boolean"}, {Type: "string", MinLength: new(uint64(1))}}}
	case reflect.TypeFor[Labels]():
		return &jsonschema.Schema{Type: "object", AdditionalProperties: scalarOrNull()}
	case reflect.TypeFor[Patches]():
		return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{
			AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "object"}, {Type: "array"}},
		}}
	case reflect.TypeFor[Pools]():
		return &jsonschema.Schema{
			Type: "object",
			PropertyNames: &jsonschema.Schema{
				Pattern: "^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$",
				Not:     &jsonschema.Schema{Const: RoleControlPlane},
			},
			AdditionalProperties: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Ref: "#/$defs/Pool"}, {Type: "null"}}},
		}
	case reflect.TypeFor[SecurityRules]():
		return securitySchema()
	}
	return nil
}

func securitySchema() *jsonschema.Schema {
	hosts := &jsonschema.Schema{
		Type:                 "object",
		Description:          "label: IPv4 network (strict; /32 for one host; 0.0.0.0/0 is open to all)",
		AdditionalProperties: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "null"}}},
	}
	props := jsonschema.NewProperties()
	props.Set("port", &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: "1", Maximum: "65535"}, {Type: "string", Pattern: "^[0-9]+$"}, {Type: "null"},
	}})
	props.Set("hosts", &jsonschema.Schema{AnyOf: []*jsonschema.Schema{hosts, {Type: "null"}}})
	long := &jsonschema.Schema{
		Title:                "long form",
		Type:                 "object",
		Properties:           props,
		AdditionalProperties: jsonschema.FalseSchema,
		AnyOf:                []*jsonschema.Schema{{Required: []string{"port"}}, {Required: []string{"hosts"}}},
	}
	short := &jsonschema.Schema{
		Title:                "short form",
		Type:                 "object",
		Not:                  &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Required: []string{"port"}}, {Required: []string{"hosts"}}}},
		AdditionalProperties: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "null"}}},
	}
	return &jsonschema.Schema{
		Type:                 "object",
		Description:          "Rules kubernetes (6443), talos (50000), http (80) and https (443) have default ports; others need port.",
		AdditionalProperties: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{long, short, {Type: "null"}}},
	}
}

func scalarOrNull() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string"}, {Type: "number"}, {Type: "boolean"}, {Type: "null"},
	}}
}

// loosen makes every property of an object schema accept what the loader
// accepts beyond the reflected type: null (absent) everywhere, and digit
// strings ("40") for integers.
func loosen(s *jsonschema.Schema) {
	if s == nil || s.Properties == nil {
		return
	}
	for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
		p := pair.Value
		if p.Type == "null" {
			continue
		}
		outer := &jsonschema.Schema{Description: p.Description, Default: p.Default}
		p.Description, p.Default = "", nil
		outer.AnyOf = []*jsonschema.Schema{p}
		if p.Type == "integer" {
			outer.AnyOf = append(outer.AnyOf, &jsonschema.Schema{Type: "string", Pattern: "^[0-9]+$"})
		}
		outer.AnyOf = append(outer.AnyOf, &jsonschema.Schema{Type: "null"})
		pair.Value = outer
	}
}
