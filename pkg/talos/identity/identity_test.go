package identity_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
	yaml4 "go.yaml.in/yaml/v4"

	"github.com/talosc/talosc/pkg/talos/identity"

	"github.com/talosc/talosc/pkg/config"
)

// passphraseRE is Python's secrets.token_urlsafe(32): 43 base64url chars.
var passphraseRE = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

func TestGenerate_LayoutOfTalosctlGenSecrets(t *testing.T) {
	t.Parallel()

	tests := []struct {
		version    string
		encryption string // the secrets key carrying the etcd encryption secret
	}{
		{"v1.2", "aescbcencryptionsecret"},
		{"v1.13.0", "secretboxencryptionsecret"},
		{"1.13.4", "secretboxencryptionsecret"},
		{"v1.14", "secretboxencryptionsecret"},
	}

	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			t.Parallel()

			id, err := identity.Generate(tt.version)
			if err != nil {
				t.Fatal(err)
			}

			data, err := id.Marshal()
			if err != nil {
				t.Fatal(err)
			}

			var doc map[string]any
			if err := yaml4.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}

			want := map[string][]string{
				"cluster":    {"id", "secret"},
				"secrets":    {"bootstraptoken", tt.encryption},
				"trustdinfo": {"token"},
				"certs":      {"etcd", "k8s", "k8saggregator", "k8sserviceaccount", "os"},
			}
			got := map[string][]string{}

			for k, v := range doc {
				if k == identity.PassphraseKey {
					continue
				}

				m, ok := v.(map[string]any)
				if !ok {
					t.Fatalf("%s is %T, want a mapping", k, v)
				}

				for sub, val := range m {
					if val == nil || val == "" {
						t.Errorf("%s.%s is empty", k, sub)
					}

					got[k] = append(got[k], sub)
				}

				slices.Sort(got[k])
			}

			for k := range want {
				slices.Sort(want[k])
			}

			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}

			pass, _ := doc[identity.PassphraseKey].(string)
			if !passphraseRE.MatchString(pass) {
				t.Errorf("%s = %d chars, want 43 base64url characters", identity.PassphraseKey, len(pass))
			}

			// The passphrase is the last line, appended after the bundle.
			if !bytes.HasSuffix(data, []byte(identity.PassphraseKey+": "+pass+"\n")) {
				t.Errorf("passphrase is not the appended last line")
			}

			if err := id.Bundle().Validate(talosconfig.TalosVersionCurrent); err != nil {
				t.Errorf("generated bundle does not validate: %v", err)
			}
		})
	}
}

func TestGenerate_FreshSecretsEachTime(t *testing.T) {
	t.Parallel()

	a, err := identity.Generate("v1.13")
	if err != nil {
		t.Fatal(err)
	}

	b, err := identity.Generate("v1.13")
	if err != nil {
		t.Fatal(err)
	}

	pa, _ := a.DiskEncryptionPassphrase()
	pb, _ := b.DiskEncryptionPassphrase()

	if pa == pb || bytes.Equal(a.TalosCA(), b.TalosCA()) ||
		a.Bundle().Secrets.BootstrapToken == b.Bundle().Secrets.BootstrapToken {
		t.Error("two generated identities share secrets")
	}
}

func TestGenerate_InvalidVersion(t *testing.T) {
	t.Parallel()

	for _, v := range []string{"", "latest", "one.two"} {
		if _, err := identity.Generate(v); err == nil || !strings.Contains(err.Error(), "invalid Talos version") {
			t.Errorf("Generate(%q) error = %v, want invalid Talos version", v, err)
		}
	}
}

func TestParse_Errors(t *testing.T) {
	t.Parallel()

	valid, err := os.ReadFile(filepath.Join("testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	withoutCerts, _, found := bytes.Cut(valid, []byte("certs:"))
	if !found {
		t.Fatal("fixture has no certs")
	}

	tests := []struct {
		name string
		data string
		want string
	}{
		{"empty", "", "file is empty"},
		{"comment only", "# nothing\n", "file is empty"},
		{"sequence", "- a\n- b\n", "not a YAML mapping"},
		{"scalar", "hello\n", "not a YAML mapping"},
		{"truncated", string(valid[:len(valid)/2]), ""},
		{"no certs", string(withoutCerts), "certs is required"},
		{"bad certificate", strings.Replace(string(valid), "crt: LS0t", "crt: AAAA", 1), ""},
		{"passphrase not scalar", strings.Replace(string(valid), identity.PassphraseKey+": ",
			identity.PassphraseKey+":\n  - ", 1), "must be a string"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, err := identity.Parse([]byte(tt.data))
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}

			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParse_UnknownKeysAreNoted(t *testing.T) {
	t.Parallel()

	valid, err := os.ReadFile(filepath.Join("testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	id, err := identity.Parse(append(valid, []byte("zeta: 1\nalpha: 2\n")...))
	if err != nil {
		t.Fatal(err)
	}

	want := []string{
		`talossecrets.yaml: ignoring unknown top-level key "alpha"`,
		`talossecrets.yaml: ignoring unknown top-level key "zeta"`,
	}
	if diff := cmp.Diff(want, id.Notes()); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

func TestParse_PassphraseIsLiteralText(t *testing.T) {
	t.Parallel()

	legacy, err := os.ReadFile(filepath.Join("testdata", "talossecrets-legacy.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		line string
		want string
		ok   bool
	}{
		{identity.PassphraseKey + ": -abc_DEF\n", "-abc_DEF", true},
		{identity.PassphraseKey + ": 0123\n", "0123", true},
		{identity.PassphraseKey + ": \"true\"\n", "true", true},
		{identity.PassphraseKey + ": 1e3\n", "1e3", true},
		{identity.PassphraseKey + ": \"\"\n", "", false},
		{identity.PassphraseKey + ":\n", "", false},
	}

	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			t.Parallel()

			id, err := identity.Parse(append(slices.Clone(legacy), tt.line...))
			if err != nil {
				t.Fatal(err)
			}

			got, ok := id.DiskEncryptionPassphrase()
			if got != tt.want || ok != tt.ok {
				t.Errorf("DiskEncryptionPassphrase() = (%q, %v), want (%q, %v)", got, ok, tt.want, tt.ok)
			}

			// Re-marshalling keeps the exact text (quoted where YAML needs it).
			data, err := id.Marshal()
			if err != nil {
				t.Fatal(err)
			}

			again, err := identity.Parse(data)
			if err != nil {
				t.Fatal(err)
			}

			if got2, _ := again.DiskEncryptionPassphrase(); got2 != tt.want {
				t.Errorf("after Marshal: passphrase %q, want %q", got2, tt.want)
			}
		})
	}
}

func TestIdentity_NeverPrintsSecrets(t *testing.T) {
	t.Parallel()

	id, err := identity.Load(filepath.Join("testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	pass, _ := id.DiskEncryptionPassphrase()
	b := id.Bundle()
	secretsList := []string{
		pass, b.Secrets.BootstrapToken, b.TrustdInfo.Token, b.Cluster.Secret,
		b.Secrets.SecretboxEncryptionSecret, string(b.Certs.OS.Key[30:60]),
	}

	var out bytes.Buffer

	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x"} {
		fmt.Fprintf(&out, verb+"\n", id)
		fmt.Fprintf(&out, verb+"\n", *id)
	}

	slog.New(slog.NewJSONHandler(&out, nil)).Info("loaded", "identity", id)

	for _, s := range secretsList {
		if strings.Contains(out.String(), s) {
			t.Errorf("a secret leaked into formatted output:\n%s", out.String())
		}
	}

	if !strings.Contains(out.String(), "secrets redacted") {
		t.Errorf("output lacks the redacted summary:\n%s", out.String())
	}
}

func TestSave_CreatesFile0600(t *testing.T) {
	t.Parallel()

	id, err := identity.Load(filepath.Join("testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, config.TalosSecretsFile)

	if err := id.Save(path); err != nil {
		t.Fatal(err)
	}

	if got := fileMode(t, path); got != 0o600 {
		t.Errorf("mode = %04o, want 0600", got)
	}

	if diff := cmp.Diff([]string{config.TalosSecretsFile}, dirNames(t, dir)); diff != "" {
		t.Errorf("directory entries (-want +got):\n%s", diff)
	}
}

func TestSave_NeverOverwrites(t *testing.T) {
	t.Parallel()

	id, err := identity.Generate("v1.13")
	if err != nil {
		t.Fatal(err)
	}

	dir := copyFixture(t, "talossecrets.yaml", 0o600)
	path := filepath.Join(dir, config.TalosSecretsFile)

	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	err = id.Save(path)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Save over an existing file: error = %v, want fs.ErrExist", err)
	}

	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	if !bytes.Equal(before, after) {
		t.Error("Save modified an existing identity file")
	}

	assertNoTempFiles(t, dir)
}

func TestSave_MissingDirectory(t *testing.T) {
	t.Parallel()

	id, err := identity.Load(filepath.Join("testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	err = id.Save(filepath.Join(t.TempDir(), "nope", config.TalosSecretsFile))
	if err == nil || !strings.Contains(err.Error(), "save cluster identity") {
		t.Errorf("error = %v, want a save cluster identity error", err)
	}
}

func TestIdentity_ZeroValueIsEmpty(t *testing.T) {
	t.Parallel()

	var zero identity.Identity

	if _, err := zero.Marshal(); err == nil {
		t.Error("Marshal of a zero Identity succeeded")
	}

	if zero.TalosCA() != nil || zero.KubernetesCA() != nil || zero.Bundle() != nil {
		t.Error("a zero Identity returned key material")
	}

	if err := zero.Save(filepath.Join(t.TempDir(), config.TalosSecretsFile)); err == nil {
		t.Error("Save of a zero Identity succeeded")
	}
}
