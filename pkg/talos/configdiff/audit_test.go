package configdiff

import (
	"strings"
	"testing"
)

// TestAuditShortSecretsUnderUnusualNames: a value that came from
// secrets.yaml is redacted whatever its key (DB_PW), and inside a longer
// string, while a change to it still shows (I-C3).
func TestAuditShortSecretsUnderUnusualNames(t *testing.T) {
	t.Parallel()
	a := []byte("machine:\n  env:\n    LAB: \"0\"\n    DB_PW: hunter1\n")
	b := []byte("machine:\n  env:\n    LAB: \"0\"\n    DB_PW: hunter2\n    SMTP_PASS: hunter3\n    DSN: postgres://app@db/x?pw=hunter2&sslmode=on\n  kubelet:\n    extraArgs:\n      client-ca-data: \"cGFzcw\"\n")
	known := []string{"hunter1", "hunter2"} // from secrets.yaml
	d, err := Diff(a, b, known...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("diff:\n%s", d)
	for _, s := range []string{"hunter1", "hunter2", "hunter3"} {
		if strings.Contains(d, s) {
			t.Errorf("plan diff prints %q", s)
		}
	}
	if strings.Count(d, "DB_PW: <redacted:") != 2 || !strings.Contains(d, "sslmode=on") {
		t.Errorf("the change of DB_PW, or the rest of the DSN, is not shown")
	}
	red, err := Redact(b, known...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(red), "hunter2") {
		t.Errorf("Redact prints a known secret:\n%s", red)
	}
}
