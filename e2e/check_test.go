package e2e

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/report/reporttest"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// cmdCertsMatch runs "certs-match DIR FILE": FILE holds a check report
// (check -o json) whose certificates are exactly the talosconfig's and
// kubeconfig's client certificates and the four cluster CAs of DIR, each
// with the NotAfter the certificate itself carries.
func cmdCertsMatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: certs-match DIR FILE")
	}
	var rep report.CheckReport
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[1])), &rep))
	want := map[string]time.Time{}
	tc, err := clientconfig.Open(ts.MkAbs(args[0] + "/talosconfig"))
	ts.Check(err)
	want["talosconfig"] = certNotAfter(ts, tc.Contexts[tc.Context].Crt)
	var kc struct {
		Users []struct {
			User struct {
				Data string `yaml:"client-certificate-data"`
			} `yaml:"user"`
		} `yaml:"users"`
	}
	ts.Check(yaml.Unmarshal([]byte(ts.ReadFile(args[0]+"/kubeconfig")), &kc))
	if len(kc.Users) != 1 {
		ts.Fatalf("kubeconfig has %d users, want 1", len(kc.Users))
	}
	want["kubeconfig"] = certNotAfter(ts, kc.Users[0].User.Data)
	id, err := identity.Load(ts.MkAbs(args[0] + "/talossecrets.yaml"))
	ts.Check(err)
	for _, ca := range id.CACertificates() {
		want[ca.Name] = certNotAfter(ts, base64.StdEncoding.EncodeToString(ca.PEM))
	}
	if len(rep.Certificates) != len(want) || len(want) != 6 {
		ts.Fatalf("the report has %d certificates, want %d: %+v", len(rep.Certificates), len(want), rep.Certificates)
	}
	for _, c := range rep.Certificates {
		if !c.NotAfter.Equal(want[c.Name]) {
			ts.Fatalf("certificate %s: the report says %s, the certificate %s", c.Name, c.NotAfter, want[c.Name])
		}
		ts.Logf("%s expires %s (%d days left)", c.Name, c.NotAfter.Format(time.RFC3339), c.DaysLeft)
	}
}

func certNotAfter(ts *testscript.TestScript, b64 string) time.Time {
	data, err := base64.StdEncoding.DecodeString(b64)
	ts.Check(err)
	block, _ := pem.Decode(data)
	if block == nil {
		ts.Fatalf("no PEM certificate")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	ts.Check(err)
	return c.NotAfter
}

// cmdTextfile runs "textfile FILE [SERIES=VALUE | !SERIES ...]": FILE
// parses with Prometheus' text parser (expfmt) as gauges with help, each
// SERIES (name{label="value",...}, labels sorted) has VALUE, and each
// !SERIES is absent.
func cmdTextfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: textfile FILE [SERIES=VALUE | !SERIES ...]")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	got, err := reporttest.Parse(f)
	if err != nil {
		ts.Fatalf("%s does not parse: %v", args[0], err)
	}
	for _, a := range args[1:] {
		if series, ok := strings.CutPrefix(a, "!"); ok {
			if v, has := got[series]; has {
				ts.Fatalf("%s = %v, want absent", series, v)
			}
			continue
		}
		i := strings.LastIndex(a, "=")
		if i < 0 {
			ts.Fatalf("textfile: %q is not SERIES=VALUE", a)
		}
		want, err := strconv.ParseFloat(a[i+1:], 64)
		ts.Check(err)
		if v, has := got[a[:i]]; !has || v != want {
			ts.Fatalf("%s = %v (present %v), want %v", a[:i], v, has, want)
		}
	}
}
