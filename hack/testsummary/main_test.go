package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stream is a hand-made "go test -json" stream: one package passes with a
// skip and a subtest, one fails, one has no tests, one fails to build.
const stream = `go: downloading example.com/mod v1.0.0
{"Action":"start","Package":"ex/ok"}
{"Action":"run","Package":"ex/ok","Test":"TestA"}
{"Action":"output","Package":"ex/ok","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"run","Package":"ex/ok","Test":"TestA/sub"}
{"Action":"output","Package":"ex/ok","Test":"TestA/sub","Output":"=== RUN   TestA/sub\n"}
{"Action":"pass","Package":"ex/ok","Test":"TestA/sub"}
{"Action":"pass","Package":"ex/ok","Test":"TestA"}
{"Action":"run","Package":"ex/ok","Test":"TestSkip"}
{"Action":"output","Package":"ex/ok","Test":"TestSkip","Output":"    x_test.go:9: needs a lab\n"}
{"Action":"skip","Package":"ex/ok","Test":"TestSkip"}
{"Action":"output","Package":"ex/ok","Output":"PASS\n"}
{"Action":"output","Package":"ex/ok","Output":"ok  \tex/ok\t0.01s\n"}
{"Action":"pass","Package":"ex/ok"}
{"Action":"start","Package":"ex/bad"}
{"Action":"run","Package":"ex/bad","Test":"TestB"}
{"Action":"output","Package":"ex/bad","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"ex/bad","Test":"TestB","Output":"    b_test.go:7: got 1, want 2\n"}
{"Action":"output","Package":"ex/bad","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}
{"Action":"fail","Package":"ex/bad","Test":"TestB"}
{"Action":"output","Package":"ex/bad","Output":"FAIL\n"}
{"Action":"output","Package":"ex/bad","Output":"FAIL\tex/bad\t0.01s\n"}
{"Action":"fail","Package":"ex/bad"}
{"Action":"start","Package":"ex/none"}
{"Action":"output","Package":"ex/none","Output":"?   \tex/none\t[no test files]\n"}
{"Action":"skip","Package":"ex/none"}
`

const buildFailure = `{"ImportPath":"ex/broken [ex/broken.test]","Action":"build-output","Output":"# ex/broken [ex/broken.test]\n"}
{"ImportPath":"ex/broken [ex/broken.test]","Action":"build-output","Output":"broken/b.go:3:1: syntax error\n"}
{"ImportPath":"ex/broken [ex/broken.test]","Action":"build-fail"}
{"Action":"start","Package":"ex/broken"}
{"Action":"output","Package":"ex/broken","Output":"FAIL\tex/broken [build failed]\n"}
{"Action":"fail","Package":"ex/broken"}
`

func summarize(t *testing.T, in string, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(in), &out, &errOut)
	if errOut.Len() > 0 {
		t.Errorf("stderr: %s", errOut.String())
	}
	return code, out.String()
}

func TestRun_CountsAndPrintsFailures(t *testing.T) {
	t.Parallel()
	code, out := summarize(t, stream)
	want := "go: downloading example.com/mod v1.0.0\n" +
		"ok  \tex/ok\t0.01s\n" +
		"    b_test.go:7: got 1, want 2\n--- FAIL: TestB (0.00s)\n" +
		"FAIL\nFAIL\tex/bad\t0.01s\n" +
		"?   \tex/none\t[no test files]\n" +
		"tests: 2 passed, 1 failed, 1 skipped\n"
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

func TestRun_VerbosePrintsEverything(t *testing.T) {
	t.Parallel()
	_, out := summarize(t, stream, "-v")
	for _, s := range []string{"=== RUN   TestA/sub\n", "needs a lab", "=== RUN   TestB\n", "--- FAIL: TestB", "PASS\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("verbose output lacks %q:\n%s", s, out)
		}
	}
}

func TestRun_AllPassExitsZero(t *testing.T) {
	t.Parallel()
	ok, _, _ := strings.Cut(stream, `{"Action":"start","Package":"ex/bad"}`)
	code, out := summarize(t, ok)
	if code != 0 || !strings.HasSuffix(out, "tests: 2 passed, 0 failed, 1 skipped\n") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

func TestRun_BuildFailureFails(t *testing.T) {
	t.Parallel()
	code, out := summarize(t, buildFailure)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, s := range []string{"syntax error", "tests: 0 passed, 0 failed, 0 skipped\n", "packages: 1 failed without a failing test"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestRun_EmptyInput(t *testing.T) {
	t.Parallel()
	code, out := summarize(t, "")
	if code != 0 || out != "tests: 0 passed, 0 failed, 0 skipped\n" {
		t.Errorf("exit %d, output %q", code, out)
	}
}

func TestRun_BadArgs(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := run([]string{"stray"}, strings.NewReader(""), &out, &errOut); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}

// TestRun_RealGoTest feeds the output of a real "go test -json" run, so a
// change in test2json's format shows up here.
func TestRun_RealGoTest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go test")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.test/sum\n\ngo 1.24\n",
		"x_test.go": `package sum

import "testing"

func TestPass(t *testing.T) { t.Run("sub", func(t *testing.T) {}) }
func TestSkip(t *testing.T) { t.Skip("skipped") }
func TestFail(t *testing.T) { t.Error("boom") }
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), "go", "test", "-json", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	raw, _ := cmd.Output() // exits 1 because TestFail fails
	code, out := summarize(t, string(raw))
	if code != 1 || !strings.HasSuffix(out, "tests: 2 passed, 1 failed, 1 skipped\n") || !strings.Contains(out, "boom") {
		t.Errorf("exit %d, output:\n%s\ninput:\n%s", code, out, raw)
	}
}
