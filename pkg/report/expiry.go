package report

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"time"
)

// DefaultExpiryWarning is how long before a certificate expires check
// starts to warn (30 days).
const DefaultExpiryWarning = 30 * 24 * time.Hour

// Expiry reads the first certificate in pemData and decides whether it
// needs attention at now: expired, or expiring within warn. A certificate
// that does not parse is an error (the caller reports the check
// incomplete: it cannot tell).
func Expiry(cert Certificate, pemData []byte, now time.Time, warn time.Duration) (Certificate, error) {
	block, rest := pem.Decode(pemData)
	for block != nil && block.Type != "CERTIFICATE" {
		block, rest = pem.Decode(rest)
	}
	if block == nil {
		return cert, errors.New("no PEM certificate")
	}
	x, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return cert, err
	}
	cert.Subject = x.Subject.String()
	cert.NotAfter = x.NotAfter.UTC()
	left := cert.NotAfter.Sub(now)
	cert.DaysLeft = int(math.Floor(left.Hours() / 24))
	date := cert.NotAfter.Format(time.RFC3339)
	switch {
	case left <= 0:
		cert.Attention = fmt.Sprintf("expired on %s", date)
	case left < warn:
		cert.Attention = fmt.Sprintf("expires in %d days (%s)", cert.DaysLeft, date)
	}
	return cert, nil
}
