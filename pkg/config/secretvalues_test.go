package config_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
)

// TestSecretValuesOfSecretsYAML: every value of secrets.yaml, a patch's
// values included (structured or written as text), is handed to output
// redaction, and never printed with the configuration (I-C3).
func TestSecretValuesOfSecretsYAML(t *testing.T) {
	t.Parallel()
	secrets := `openstack:
  credential_id: id-0123456789
  credential_secret: s3cr3t-value
talos:
  config_patches:
    - machine: {env: {DB_PW: hunter2}}
    - |
      machine:
        env:
          API_PIN: "90210"
          ENABLED: true
`
	c, probs := load(t, map[string]string{
		config.ClusterFile: "include: [secrets.yaml]\n" + openstackBase,
		config.SecretsFile: secrets,
	}, config.LoadOptions{})
	if probs != nil {
		t.Fatalf("Load: %v", probs)
	}
	got := c.RevealSecretValues()
	for _, want := range []string{"id-0123456789", "s3cr3t-value", "hunter2", "90210"} {
		if !slices.Contains(got, want) {
			t.Errorf("secret values %q lack %q", got, want)
		}
	}
	if slices.Contains(got, "true") || slices.Contains(got, "ext-net") {
		t.Errorf("secret values %q hold a boolean or a value of cluster.yaml", got)
	}
	// The values themselves never print with the configuration (the
	// credentials are redacted fields; SecretValues is redacted too).
	js, _ := json.Marshal(c)
	for _, printed := range []string{fmt.Sprintf("%+v", *c), fmt.Sprintf("%#v", *c), string(js)} {
		for _, v := range []string{"id-0123456789", "s3cr3t-value"} {
			if strings.Contains(printed, v) {
				t.Errorf("the configuration prints secret value %q", v)
			}
		}
	}
}
