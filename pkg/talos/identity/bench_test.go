package identity_test

import (
	"testing"

	"github.com/talosc/talosc/pkg/talos/identity"
)

// BenchmarkGenerate measures minting a new identity; the RSA-4096
// service-account key the v1.7+ contracts select dominates it.
func BenchmarkGenerate(b *testing.B) {
	for b.Loop() {
		if _, err := identity.Generate("v1.13.0"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad measures reading and validating the committed fixture.
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := identity.Load("testdata/talossecrets.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}
