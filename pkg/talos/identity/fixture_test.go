package identity_test

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"

	"github.com/talosc/talosc/pkg/talos/identity"

	"github.com/talosc/talosc/pkg/config"
)

// fixture describes a committed talossecrets.yaml in the reference format and
// the values it must load to. The constants were computed once from the files
// (openssl x509 -fingerprint -sha256); a change in loading breaks them.
type fixture struct {
	file           string
	osCAFP         string // SHA-256 of the Talos API (OS) CA certificate DER
	k8sCAFP        string // SHA-256 of the Kubernetes CA certificate DER
	bootstrapToken string
	trustdToken    string
	passphrase     string // "" = the key is absent (older cluster)
	aescbc         bool   // contract <= 1.2 bundles use aescbc, newer secretbox
}

func fixtures() []fixture {
	return []fixture{
		{
			// Written by Generate("v1.13.0") + Save: `talosctl gen secrets`
			// layout (go.yaml.in/yaml/v4) plus the appended passphrase.
			file:           "talossecrets.yaml",
			osCAFP:         "4a05e6216cde7432aeb119f4685e7164fa0d7c00c37d310e00d77686d6a2c68e",
			k8sCAFP:        "cb5d162a8e4c286ae9c7998ed647d136d7fe27b8e57eaeec8e7f0183be932f0d",
			bootstrapToken: "urvrkn.zqcl5aaonmzie5yb",
			trustdToken:    "cplrmg.wmdqj2onw2az73bg",
			passphrase:     "m9quff-JFHFbteocjtkcEeb5IE6sipKcJThtHOCOTEg",
		},
		{
			// An older cluster: contract v1.2 bundle marshalled with
			// gopkg.in/yaml.v3 as older talosctl did, without the passphrase.
			file:           "talossecrets-legacy.yaml",
			osCAFP:         "be3cad9fd52a57245dd099d467382c2238139253b8adcd21854277fdd8cae5b9",
			k8sCAFP:        "b348d44c606145c081969572c344154c7e543480cf743503f8ee1d067b78c822",
			bootstrapToken: "fky243.dsjlwgho95c67eny",
			trustdToken:    "xbzkv2.50ejw1zj2ggu4uwd",
			aescbc:         true,
		},
	}
}

func TestFixture_LoadsKnownIdentity(t *testing.T) {
	t.Parallel()

	for _, f := range fixtures() {
		t.Run(f.file, func(t *testing.T) {
			t.Parallel()

			id, err := identity.Load(filepath.Join("testdata", f.file))
			if err != nil {
				t.Fatal(err)
			}

			if got := certFingerprint(t, id.TalosCA()); got != f.osCAFP {
				t.Errorf("Talos CA fingerprint = %s, want %s", got, f.osCAFP)
			}

			if got := certFingerprint(t, id.KubernetesCA()); got != f.k8sCAFP {
				t.Errorf("Kubernetes CA fingerprint = %s, want %s", got, f.k8sCAFP)
			}

			assertSubject(t, id.TalosCA(), "talos")
			assertSubject(t, id.KubernetesCA(), "kubernetes")

			b := id.Bundle()
			if b.Secrets.BootstrapToken != f.bootstrapToken || b.TrustdInfo.Token != f.trustdToken {
				t.Errorf("tokens = %q/%q, want %q/%q", b.Secrets.BootstrapToken, b.TrustdInfo.Token,
					f.bootstrapToken, f.trustdToken)
			}

			if got := b.Secrets.AESCBCEncryptionSecret != ""; got != f.aescbc {
				t.Errorf("aescbc secret present = %v, want %v", got, f.aescbc)
			}

			pass, ok := id.DiskEncryptionPassphrase()
			if pass != f.passphrase || ok != (f.passphrase != "") {
				t.Errorf("DiskEncryptionPassphrase() = (%d chars, %v), want (%d chars, %v)",
					len(pass), ok, len(f.passphrase), f.passphrase != "")
			}
		})
	}
}

func assertSubject(t *testing.T, pemBytes []byte, org string) {
	t.Helper()

	block, _ := pem.Decode(pemBytes)
	if block == nil {
		t.Fatal("no PEM block")
	}

	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}

	if diff := cmp.Diff([]string{org}, crt.Subject.Organization); diff != "" {
		t.Errorf("CA subject organization (-want +got):\n%s", diff)
	}

	if !crt.IsCA {
		t.Errorf("certificate for O=%s is not a CA", org)
	}
}

// TestFixture_ResaveRoundTrips checks that loading and saving keeps the file
// byte-identical, so a converge that re-saves never alters the identity.
func TestFixture_ResaveRoundTrips(t *testing.T) {
	t.Parallel()

	for _, f := range fixtures() {
		t.Run(f.file, func(t *testing.T) {
			t.Parallel()

			orig, err := os.ReadFile(filepath.Join("testdata", f.file))
			if err != nil {
				t.Fatal(err)
			}

			id, err := identity.Parse(orig)
			if err != nil {
				t.Fatal(err)
			}

			out := filepath.Join(t.TempDir(), config.TalosSecretsFile)
			if err := id.Save(out); err != nil {
				t.Fatal(err)
			}

			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}

			if !bytes.Equal(orig, got) {
				t.Errorf("re-saved file differs (-orig +resaved):\n%s", cmp.Diff(string(orig), string(got)))
			}

			again, err := identity.Load(out)
			if err != nil {
				t.Fatal(err)
			}

			if diff := cmp.Diff(id.Bundle(), again.Bundle(), cmp.FilterPath(isClock, cmp.Ignore())); diff != "" {
				t.Errorf("bundle after round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func isClock(p cmp.Path) bool { return p.Last().String() == ".Clock" }

// TestFixture_MachineryReadsOurFormat checks that what talosctl and machinery
// read (`--with-secrets`, secrets.LoadBundle) is the same bundle Load sees:
// the appended passphrase key does not disturb them.
func TestFixture_MachineryReadsOurFormat(t *testing.T) {
	t.Parallel()

	for _, f := range fixtures() {
		t.Run(f.file, func(t *testing.T) {
			t.Parallel()

			path := filepath.Join("testdata", f.file)

			want, err := secrets.LoadBundle(path)
			if err != nil {
				t.Fatal(err)
			}

			id, err := identity.Load(path)
			if err != nil {
				t.Fatal(err)
			}

			if diff := cmp.Diff(want, id.Bundle(), cmp.FilterPath(isClock, cmp.Ignore())); diff != "" {
				t.Errorf("bundle (-machinery +identity):\n%s", diff)
			}
		})
	}
}
