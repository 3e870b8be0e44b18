package configdiff_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/goldentest"
	"github.com/talosc/talosc/pkg/talos/configdiff"
)

// fixtureSecrets are every secret in testdata/old.yaml and new.yaml.
func fixtureSecrets() []string {
	return []string{
		"OLDTOKENzz0123456", "NEWTOKENzz0123456", // machine.token, cluster.token
		"LS0tLS1CRUdJTiBFRDI1NTE5IFBSSVZBVEUgS0VZ", // both CA keys (base64 PEM)
		"PROXYPASSWORD", "FILESECRET", "REGISTRYPASSWORD",
		"Q2x1c3RlcklEMDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1u", "CLUSTERSECRETvalue", "SECRETBOXvalue",
		"MANIFESTBODY", "OLDKEYabc123", "NEWKEYabc123",
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func assertNoSecrets(t *testing.T, out string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("output leaks %q", s)
		}
	}
}

// assertGolden compares got with testdata/name.
func assertGolden(t *testing.T, name, got string) {
	t.Helper()
	goldentest.Assert(t, filepath.Join("testdata", name), []byte(got))
}

func TestDiff_Golden(t *testing.T) {
	t.Parallel()
	oldCfg, newCfg := readFixture(t, "old.yaml"), readFixture(t, "new.yaml")
	got, err := configdiff.Diff(oldCfg, newCfg)
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, got, fixtureSecrets())
	assertGolden(t, "diff.golden", got)

	redacted, err := configdiff.Redact(oldCfg)
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, string(redacted), fixtureSecrets())
	assertGolden(t, "old.redacted.golden", string(redacted))
}

// TestDiff_SecretChangesShow: a change that is only in a redacted value is a
// changed line with different markers; an unchanged secret is no change.
func TestDiff_SecretChangesShow(t *testing.T) {
	t.Parallel()
	const tmpl = "version: v1alpha1\nmachine:\n  type: worker\n  token: %s\n  ca: {crt: AAAA, key: SAMEKEYVALUE}\n"
	got, err := configdiff.Diff(
		[]byte(strings.Replace(tmpl, "%s", "abcdef.OLDOLDOLDOLDOLD1", 1)),
		[]byte(strings.Replace(tmpl, "%s", "abcdef.NEWNEWNEWNEWNEW2", 1)))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^-    token: (<redacted:[0-9a-f]{8}>)\n\+    token: (<redacted:[0-9a-f]{8}>)$`)
	m := re.FindStringSubmatch(got)
	if m == nil || m[1] == m[2] {
		t.Fatalf("a changed token is not a changed line:\n%s", got)
	}
	if strings.Count(got, "\n-") != 1 || strings.Count(got, "\n+") != 2 { // +++ header and the token
		t.Errorf("only the token should change:\n%s", got)
	}
	assertNoSecrets(t, got, []string{"OLDOLD", "NEWNEW", "SAMEKEYVALUE"})
}

// TestDiff_ContextLinesNeverLeak puts secrets right next to a change and a
// change right after a long body, where a line-based redactor would see
// context lines from the middle of a certificate or manifest.
func TestDiff_ContextLinesNeverLeak(t *testing.T) {
	t.Parallel()
	body := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("            BODYLINE" + strings.Repeat("x", i%7) + "\n")
		}
		return b.String()
	}
	cfg := func(path, san string) []byte {
		return []byte("version: v1alpha1\nmachine:\n  token: ADJACENTSECRET\n  certSANs: [" + san + "]\n  key: ADJACENTKEY\n" +
			"  files:\n    - op: create\n      content: |\n" + body(40) + "      path: " + path + "\n" +
			"cluster:\n  inlineManifests:\n    - name: m\n      contents: |\n" + body(40) + "  secret: ADJACENTSECRET2\n")
	}
	got, err := configdiff.Diff(cfg("/etc/a", "10.0.0.1"), cfg("/etc/b", "10.0.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, got, []string{"ADJACENTSECRET", "ADJACENTKEY", "BODYLINE"})
	for _, want := range []string{"     token: <redacted:", "-        - 10.0.0.1", "+        - 10.0.0.2", "-          path: /etc/a", "           content: <redacted:"} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
}

func TestDiff_Documents(t *testing.T) {
	t.Parallel()
	const (
		legacy   = "version: v1alpha1\nmachine: {type: worker}\n"
		hostname = "apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: n1\n"
		ruleA    = "apiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: a\nportSelector: {ports: [1], protocol: tcp}\n"
		ruleB    = "apiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: b\nportSelector: {ports: [2], protocol: tcp}\n"
	)
	doc := func(parts ...string) []byte { return []byte(strings.Join(parts, "---\n")) }
	cases := []struct {
		name     string
		old, new []byte
		want     string
	}{
		{"equal", doc(legacy, hostname, ruleA), doc(legacy, hostname, ruleA), ""},
		{
			"reordered documents, comments and flow style are no change", doc(legacy, hostname, ruleA, ruleB),
			doc(ruleB, "# a comment\n"+ruleA, hostname, "version: v1alpha1\nmachine:\n  type: worker # same\n"), "",
		},
		{"empty documents are ignored", doc(legacy), []byte("---\n" + legacy + "---\n"), ""},
		{"an added document", doc(legacy), doc(legacy, ruleA), `--- /dev/null
+++ b/v1alpha1/NetworkRuleConfig/a
@@ -0,0 +1,7 @@
+apiVersion: v1alpha1
+kind: NetworkRuleConfig
+name: a
+portSelector:
+    ports:
+        - 1
+    protocol: tcp
`},
		{"a removed document, after the changed ones", doc(legacy, hostname, ruleB), doc(legacy, strings.Replace(hostname, "n1", "n2", 1)), `--- a/v1alpha1/HostnameConfig
+++ b/v1alpha1/HostnameConfig
@@ -1,3 +1,3 @@
 apiVersion: v1alpha1
 kind: HostnameConfig
-hostname: n1
+hostname: n2
--- a/v1alpha1/NetworkRuleConfig/b
+++ /dev/null
@@ -1,7 +0,0 @@
-apiVersion: v1alpha1
-kind: NetworkRuleConfig
-name: b
-portSelector:
-    ports:
-        - 2
-    protocol: tcp
`},
		{"the v1alpha1 document is one document", doc(legacy), doc("version: v1alpha1\nmachine: {type: controlplane}\n"), `--- a/v1alpha1
+++ b/v1alpha1
@@ -1,3 +1,3 @@
 version: v1alpha1
 machine:
-    type: worker
+    type: controlplane
`},
		{"repeated identities are kept apart", doc(ruleA, ruleA), doc(ruleA, strings.Replace(ruleA, "[1]", "[3]", 1)), `--- a/v1alpha1/NetworkRuleConfig/a#2
+++ b/v1alpha1/NetworkRuleConfig/a#2
@@ -3,5 +3,5 @@
 name: a
 portSelector:
     ports:
-        - 1
+        - 3
     protocol: tcp
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := configdiff.Diff(tc.old, tc.new)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Diff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiff_Errors(t *testing.T) {
	t.Parallel()
	good := []byte("version: v1alpha1\n")
	cases := []struct {
		name     string
		old, new []byte
		want     string
	}{
		{"old does not parse", []byte("a: [\n"), good, "old config: document 1: yaml: line 1: did not find expected node content"},
		{"new has a scalar document", good, []byte("version: v1alpha1\n---\nhello\n"), "new config: document 2: a machine-config document must be a mapping, not a scalar"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := configdiff.Diff(tc.old, tc.new)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}
