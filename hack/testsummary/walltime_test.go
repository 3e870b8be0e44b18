package main

import (
	"strings"
	"testing"
)

// scripts is a "go test -json" stream of an E2E package: two scripts under
// TestScripts (one parallel, whose wait for a slot is not its time), one
// under TestRealCloudScripts, a test that is not a script and a second
// package.
const scripts = `{"Action":"run","Package":"ex/e2e","Test":"TestScripts"}
{"Action":"run","Package":"ex/e2e","Test":"TestScripts/fast"}
{"Action":"pause","Package":"ex/e2e","Test":"TestScripts/fast"}
{"Action":"cont","Package":"ex/e2e","Test":"TestScripts/fast"}
{"Action":"pass","Package":"ex/e2e","Test":"TestScripts/fast","Elapsed":2.5}
{"Action":"run","Package":"ex/e2e","Test":"TestScripts/slow"}
{"Action":"fail","Package":"ex/e2e","Test":"TestScripts/slow","Elapsed":310.25}
{"Action":"fail","Package":"ex/e2e","Test":"TestScripts","Elapsed":312.8}
{"Action":"run","Package":"ex/e2e","Test":"TestRealCloudScripts/real/real"}
{"Action":"pass","Package":"ex/e2e","Test":"TestRealCloudScripts/real/real","Elapsed":94}
{"Action":"pass","Package":"ex/e2e","Test":"TestRealCloudScripts/real","Elapsed":94.1}
{"Action":"pass","Package":"ex/e2e","Test":"TestLateProxy","Elapsed":400}
{"Action":"fail","Package":"ex/e2e","Elapsed":420.5}
{"Action":"pass","Package":"ex/unit","Elapsed":1.2}
{"Action":"skip","Package":"ex/none","Elapsed":0}
`

func TestRun_TimesListsScriptsAndPackagesSlowestFirst(t *testing.T) {
	t.Parallel()
	_, out := summarize(t, scripts, "-times")
	want := "E2E scripts, slowest first: 3, 407s in all\n" +
		"    310.2s  TestScripts/slow\n" +
		"     94.1s  TestRealCloudScripts/real\n" +
		"      2.5s  TestScripts/fast\n" +
		"packages, slowest first: 2 of 2\n" +
		"    420.5s  ex/e2e\n" +
		"      1.2s  ex/unit\n" +
		"tests: 4 passed, 2 failed, 0 skipped\n"
	if !strings.HasSuffix(out, want) {
		t.Errorf("output:\n%s\nwant it to end with:\n%s", out, want)
	}
}

func TestRun_TimesListsAtMostTheSlowestPackages(t *testing.T) {
	t.Parallel()
	var in strings.Builder
	for i := range topPackages + 5 {
		in.WriteString(`{"Action":"pass","Package":"ex/p` + strings.Repeat("x", i) + `","Elapsed":` + string(rune('1'+i%9)) + "}\n")
	}
	_, out := summarize(t, in.String(), "-times")
	if !strings.Contains(out, "packages, slowest first: 15 of 20\n") || strings.Count(out, "s  ex/p") != topPackages {
		t.Errorf("output:\n%s", out)
	}
	if strings.Contains(out, "E2E scripts") {
		t.Errorf("a run without scripts lists scripts:\n%s", out)
	}
}

func TestRun_WithoutTimesListsNoTimes(t *testing.T) {
	t.Parallel()
	_, out := summarize(t, scripts)
	if strings.Contains(out, "slowest first") {
		t.Errorf("times listed without -times:\n%s", out)
	}
}
