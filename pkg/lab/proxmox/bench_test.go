package proxmox_test

import (
	"testing"

	goproxmox "github.com/luthermonson/go-proxmox"

	"github.com/talosc/talosc/pkg/lab/proxmox"
)

// BenchmarkStart measures how long a lab Proxmox takes to start (CA and
// server certificate generation included).
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		srv, err := proxmox.Start(b.Context(), proxmox.Options{})
		if err != nil {
			b.Fatal(err)
		}
		_ = srv.Close()
	}
}

// BenchmarkGetVersion measures GET /version through go-proxmox over one
// kept-alive TLS connection.
func BenchmarkGetVersion(b *testing.B) {
	srv, err := proxmox.Start(b.Context(), proxmox.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	c := goproxmox.NewClient(srv.APIURL, goproxmox.WithAPIToken(proxmox.DefaultTokenID, proxmox.DefaultTokenSecret), goproxmox.WithHTTPClient(srv.HTTPClient()))
	for b.Loop() {
		if _, err := c.Version(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}
