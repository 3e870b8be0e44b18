package identity

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	yaml4 "go.yaml.in/yaml/v4"

	"github.com/talosc/talosc/pkg/config"
)

// PassphraseKey is the top-level key the reference tool appends to the
// `talosctl gen secrets` output for new clusters.
const PassphraseKey = "diskEncryptionPassphrase"

// passphraseBytes is the entropy of a new passphrase; it matches Python's
// secrets.token_urlsafe(32) (43 base64url characters, no padding).
const passphraseBytes = 32

// Identity is a cluster's Talos identity: machinery's secrets bundle (cluster
// id and secret, bootstrap and trustd tokens, etcd/Kubernetes/aggregator/OS CAs,
// service-account key) plus the optional disk-encryption passphrase. It never
// prints its secrets: fmt and slog see a redacted summary. Obtain one from
// Generate, Load, Parse or Ensure; the zero value holds nothing.
type Identity struct {
	bundle     *secrets.Bundle
	passphrase string
	notes      []string
}

// Generate mints a new identity for a cluster running talosVersion ("v1.13",
// "1.13.2", …), as `talosctl gen secrets --talos-version <v>` does, plus a
// new disk-encryption passphrase. It writes nothing.
func Generate(talosVersion string) (*Identity, error) {
	contract, err := talosconfig.ParseContractFromVersion(talosVersion)
	if err != nil {
		return nil, fmt.Errorf("generate cluster identity: invalid Talos version %q: %w", talosVersion, err)
	}

	// talosctl pins the clock so every CA gets the same validity window.
	bundle, err := secrets.NewBundle(secrets.NewFixedClock(time.Now()), contract)
	if err != nil {
		return nil, fmt.Errorf("generate cluster identity: %w", err)
	}

	// Certificates issued later from this bundle (the talosconfig admin
	// certificate) must use the real time, not the generation instant.
	bundle.Clock = secrets.NewClock()

	passphrase, err := newPassphrase()
	if err != nil {
		return nil, fmt.Errorf("generate cluster identity: %w", err)
	}

	return &Identity{bundle: bundle, passphrase: passphrase}, nil
}

// newPassphrase returns 32 random bytes, base64url without padding.
func newPassphrase() (string, error) {
	b := make([]byte, passphraseBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random passphrase: %w", err)
	}

	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Load reads an identity file in the reference format: the YAML
// `talosctl gen secrets` writes, optionally followed by the
// diskEncryptionPassphrase key (clusters created before it existed lack it,
// and must then keep disk encryption off). The bundle is validated.
func Load(path string) (*Identity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read cluster identity: %w", err)
	}

	id, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load cluster identity %s: %w", path, err)
	}

	return id, nil
}

// Parse decodes identity file content (see Load). Unknown top-level keys are
// ignored, as talosctl ignores them, and reported through Notes.
func Parse(data []byte) (*Identity, error) {
	var top map[string]yaml4.Node
	if err := yaml4.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a YAML mapping: %w", err)
	}

	if len(top) == 0 {
		return nil, errors.New("file is empty; restore talossecrets.yaml from backup")
	}

	bundle := &secrets.Bundle{Clock: secrets.NewClock()}
	if err := yaml4.Unmarshal(data, bundle); err != nil {
		return nil, fmt.Errorf("decode secrets bundle: %w", err)
	}

	if err := bundle.Validate(talosconfig.TalosVersionCurrent); err != nil {
		return nil, fmt.Errorf("invalid secrets bundle: %s", strings.TrimSpace(err.Error()))
	}

	id := &Identity{bundle: bundle}

	if node, ok := top[PassphraseKey]; ok {
		if node.Kind != yaml4.ScalarNode {
			return nil, fmt.Errorf("%s must be a string", PassphraseKey)
		}
		// The literal text is the passphrase, whatever YAML type it resolves to.
		id.passphrase = node.Value
	}

	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}

	slices.Sort(keys)

	for _, k := range keys {
		if !isKnownKey(k) {
			id.notes = append(id.notes, fmt.Sprintf("%s: ignoring unknown top-level key %q", config.TalosSecretsFile, k))
		}
	}

	return id, nil
}

// isKnownKey reports whether k is a top-level key of the reference layout:
// machinery's secrets.Bundle fields or the appended passphrase.
func isKnownKey(k string) bool {
	switch k {
	case "cluster", "secrets", "trustdinfo", "certs", PassphraseKey:
		return true
	default:
		return false
	}
}

// Marshal returns the file content in the reference layout: machinery's
// bundle marshalled as `talosctl gen secrets` does, then the
// diskEncryptionPassphrase line when the identity has one.
func (id *Identity) Marshal() ([]byte, error) {
	if !id.valid() {
		return nil, errors.New("marshal cluster identity: empty identity")
	}

	out, err := yaml4.Marshal(id.bundle)
	if err != nil {
		return nil, fmt.Errorf("marshal secrets bundle: %w", err)
	}

	if id.passphrase != "" {
		// Quoted only if a plain scalar would not read back as this exact
		// string; generated passphrases (base64url) never need it.
		line, err := yaml4.Marshal(map[string]string{PassphraseKey: id.passphrase})
		if err != nil {
			return nil, fmt.Errorf("marshal %s: %w", PassphraseKey, err)
		}

		if !bytes.HasSuffix(out, []byte("\n")) {
			out = append(out, '\n')
		}

		out = append(out, line...)
	}

	return out, nil
}

// Save writes the identity to path atomically with mode 0600 from creation.
// It never overwrites: an existing path is an error wrapping fs.ErrExist.
func (id *Identity) Save(path string) error {
	data, err := id.Marshal()
	if err != nil {
		return fmt.Errorf("save cluster identity: %w", err)
	}

	if err := writeFileAtomic(path, data, writeOptions{}); err != nil {
		return fmt.Errorf("save cluster identity: %w", err)
	}

	return nil
}

// Bundle returns machinery's secrets bundle, for generate.WithSecretsBundle.
// Callers must not modify it.
func (id *Identity) Bundle() *secrets.Bundle {
	if id == nil {
		return nil
	}

	return id.bundle
}

// TalosCA returns the PEM certificate of the Talos API (OS) CA, the CA a
// talosconfig trusts.
func (id *Identity) TalosCA() []byte {
	if !id.valid() {
		return nil
	}

	return bytes.Clone(id.bundle.Certs.OS.Crt)
}

// KubernetesCA returns the PEM certificate of the Kubernetes CA.
func (id *Identity) KubernetesCA() []byte {
	if !id.valid() || id.bundle.Certs.K8s == nil {
		return nil
	}

	return bytes.Clone(id.bundle.Certs.K8s.Crt)
}

// valid reports whether id came from Generate, Load or Parse (a zero
// Identity has no bundle).
func (id *Identity) valid() bool {
	return id != nil && id.bundle != nil && id.bundle.Certs != nil && id.bundle.Certs.OS != nil
}

// DiskEncryptionPassphrase returns the STATE/EPHEMERAL LUKS passphrase and
// whether the identity has one. Without one (clusters created before the key
// existed) disk encryption must stay off: Talos refuses to add it later.
func (id *Identity) DiskEncryptionPassphrase() (string, bool) {
	return id.passphrase, id.passphrase != ""
}

// Notes returns human-readable remarks collected while loading or ensuring
// the identity (a tightened file mode, ignored keys), for stderr.
func (id *Identity) Notes() []string { return slices.Clone(id.notes) }

// String is a redacted summary: the identity's secrets never print.
func (id Identity) String() string {
	if id.bundle == nil {
		return "talos identity <empty>"
	}

	enc := "off"
	if id.passphrase != "" {
		enc = "on"
	}

	return "talos identity (secrets redacted, disk encryption " + enc + ")"
}

// GoString is the %#v form, also redacted.
func (id Identity) GoString() string { return id.String() }

// Format prints the redacted summary for every verb, so no verb (%d, %x, …)
// can reach the fields through fmt's reflection.
func (id Identity) Format(f fmt.State, _ rune) { fmt.Fprint(f, id.String()) }

// LogValue implements slog.LogValuer with the redacted summary.
func (id Identity) LogValue() slog.Value { return slog.StringValue(id.String()) }
