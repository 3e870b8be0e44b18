package report_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/report"
)

// certPEM makes a self-signed certificate that expires at notAfter.
func certPEM(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, NotBefore: notAfter.Add(-365 * 24 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	warn := report.DefaultExpiryWarning
	keyFirst := append([]byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), certPEM(t, now.Add(100*day))...)
	for _, tc := range []struct {
		name      string
		pem       []byte
		days      int
		attention string // substring; "" means none
		err       string
	}{
		{"a year left", certPEM(t, now.Add(365*day)), 365, "", ""},
		{"just outside the warning", certPEM(t, now.Add(warn+time.Hour)), 30, "", ""},
		{"just inside the warning", certPEM(t, now.Add(warn-time.Hour)), 29, "expires in 29 days (2027-01-31T11:00:00Z)", ""},
		{"hours left", certPEM(t, now.Add(time.Hour)), 0, "expires in 0 days", ""},
		{"expired", certPEM(t, now.Add(-2*day)), -2, "expired on 2026-12-30T12:00:00Z", ""},
		{"a key block before the certificate", keyFirst, 100, "", ""},
		{"no PEM", []byte("not a certificate"), 0, "", "no PEM certificate"},
		{"a missing certificate", nil, 0, "", "no PEM certificate"},
		{"broken DER", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}), 0, "", "x509"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := report.Expiry(report.Certificate{Name: "kubeconfig"}, tc.pem, now, warn)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.DaysLeft != tc.days {
				t.Errorf("days left %d, want %d", c.DaysLeft, tc.days)
			}
			if (tc.attention == "") != (c.Attention == "") || !strings.Contains(c.Attention, tc.attention) {
				t.Errorf("attention %q, want %q", c.Attention, tc.attention)
			}
			if c.NotAfter.Location() != time.UTC || c.Subject != "CN=admin,O=system:masters" {
				t.Errorf("not after %v, subject %q", c.NotAfter, c.Subject)
			}
		})
	}
}
