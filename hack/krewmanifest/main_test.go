package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// platforms are the ones the Makefile builds; the real template must name
// exactly these.
var platforms = [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

const version = "v1.2.3"

// fakeSum is a distinct, valid sha256 for archive i.
func fakeSum(i int) string { return fmt.Sprintf("%064x", i+1) }

// writeChecksums writes a checksums.txt for the given platforms, plus the
// files "make dist" lists that are not archives.
func writeChecksums(t *testing.T, ps [][2]string) string {
	t.Helper()
	var b strings.Builder
	for i, p := range ps {
		fmt.Fprintf(&b, "%s  %s\n", fakeSum(i), ArchiveName(version, p[0], p[1]))
	}
	fmt.Fprintf(&b, "%s *talosc.yaml.sig\n", strings.Repeat("f", 64))
	path := filepath.Join(t.TempDir(), "checksums.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runGen runs the command as make dist does, with the repository's template.
func runGen(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append([]string{"-template", "../../krew/talosc.yaml", "-version", version}, args...)
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRun_FillsEveryPlatform(t *testing.T) {
	t.Parallel()
	sums := writeChecksums(t, platforms)
	outFile := filepath.Join(t.TempDir(), "talosc.yaml")
	code, stdout, stderr := runGen(t, "-checksums", sums, "-o", outFile)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want empty with -o", stdout)
	}
	data, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}

	var m struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec struct {
			Version          string `yaml:"version"`
			Homepage         string `yaml:"homepage"`
			ShortDescription string `yaml:"shortDescription"`
			Description      string `yaml:"description"`
			Caveats          string `yaml:"caveats"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				} `yaml:"selector"`
				URI    string `yaml:"uri"`
				SHA256 string `yaml:"sha256"`
				Bin    string `yaml:"bin"`
				Files  []struct {
					From string `yaml:"from"`
					To   string `yaml:"to"`
				} `yaml:"files"`
			} `yaml:"platforms"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true) // a typo in the template is a test failure
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("manifest is not the expected YAML: %v\n%s", err, data)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "talosc" {
		t.Errorf("header = %s %s %s", m.APIVersion, m.Kind, m.Metadata.Name)
	}
	if m.Spec.Version != version || m.Spec.Homepage == "" || m.Spec.ShortDescription == "" || m.Spec.Description == "" {
		t.Errorf("spec fields missing: %+v", m.Spec)
	}
	if !strings.Contains(m.Spec.Caveats, "tc-") || !strings.Contains(m.Spec.Caveats, "PATH") {
		t.Errorf("caveats do not explain tc-* binaries and PATH:\n%s", m.Spec.Caveats)
	}
	if len(m.Spec.Platforms) != len(platforms) {
		t.Fatalf("got %d platforms, want %d", len(m.Spec.Platforms), len(platforms))
	}
	wantFiles := []string{"kubectl-talosc", "tc-image", "tc-net", "tc-nodes", "tc-rancher", "tc-argocd", "LICENSE"}
	for i, p := range platforms {
		got := m.Spec.Platforms[i]
		if got.Selector.MatchLabels["os"] != p[0] || got.Selector.MatchLabels["arch"] != p[1] {
			t.Errorf("platforms[%d] selector = %v, want %s/%s", i, got.Selector.MatchLabels, p[0], p[1])
		}
		wantURI := "https://github.com/talosc/talosc/releases/download/v1.2.3/talosc_v1.2.3_" + p[0] + "_" + p[1] + ".tar.gz"
		if got.URI != wantURI {
			t.Errorf("platforms[%d] uri = %q, want %q", i, got.URI, wantURI)
		}
		if got.SHA256 != fakeSum(i) {
			t.Errorf("platforms[%d] sha256 = %q, want %q", i, got.SHA256, fakeSum(i))
		}
		if got.Bin != "kubectl-talosc" {
			t.Errorf("platforms[%d] bin = %q", i, got.Bin)
		}
		var from []string
		for _, f := range got.Files {
			from = append(from, f.From)
			if f.To != "." {
				t.Errorf("platforms[%d] file %s goes to %q, want .", i, f.From, f.To)
			}
		}
		if strings.Join(from, " ") != strings.Join(wantFiles, " ") {
			t.Errorf("platforms[%d] files = %v, want %v", i, from, wantFiles)
		}
	}
}

func TestRun_StdoutByDefault(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runGen(t, "-checksums", writeChecksums(t, platforms), "-base-url", "https://example.test/dl/")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "uri: https://example.test/dl/v1.2.3/talosc_v1.2.3_darwin_arm64.tar.gz\n") {
		t.Errorf("stdout lacks the darwin/arm64 uri:\n%s", stdout)
	}
}

func TestRun_RefusesMissingChecksum(t *testing.T) {
	t.Parallel()
	for i, missing := range platforms {
		t.Run(missing[0]+"/"+missing[1], func(t *testing.T) {
			t.Parallel()
			rest := append(append([][2]string{}, platforms[:i]...), platforms[i+1:]...)
			outFile := filepath.Join(t.TempDir(), "talosc.yaml")
			code, stdout, stderr := runGen(t, "-checksums", writeChecksums(t, rest), "-o", outFile)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			want := "no checksum for " + ArchiveName(version, missing[0], missing[1])
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, want)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want empty", stdout)
			}
			if _, err := os.Stat(outFile); !os.IsNotExist(err) {
				t.Errorf("manifest written despite the error (stat: %v)", err)
			}
		})
	}
}

func TestRun_Refuses(t *testing.T) {
	t.Parallel()
	good := strings.Repeat("a", 64)
	tests := []struct {
		name      string
		checksums string // contents; "" the four platforms, "+windows" one more, "-" no file
		args      []string
		code      int
		stderr    string
	}{
		{
			"extra archive without a platform",
			"+windows", nil, 1, "no platform in the template: talosc_v1.2.3_windows_amd64.tar.gz",
		},
		{"not a sha256", good[:63] + "  " + ArchiveName(version, "linux", "amd64") + "\n", nil, 1, "is not a sha256"},
		{"listed twice", good + "  x\n" + good + "  x\n", nil, 1, "x listed twice"},
		{"malformed line", "just-one-field\n", nil, 1, "want \"SHA256  FILE\""},
		{"version not semver", "", []string{"-version", "377b991"}, 1, "not a semantic version"},
		{"missing checksums file", "-", nil, 1, "no such file"},
		{"stray argument", "", []string{"extra"}, 2, "unexpected arguments"},
		{"unknown flag", "", []string{"-nope"}, 2, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var path string
			switch tt.checksums {
			case "":
				path = writeChecksums(t, platforms)
			case "+windows":
				path = writeChecksums(t, append(append([][2]string{}, platforms...), [2]string{"windows", "amd64"}))
			case "-":
				path = filepath.Join(t.TempDir(), "absent.txt")
			default:
				path = filepath.Join(t.TempDir(), "checksums.txt")
				if err := os.WriteFile(path, []byte(tt.checksums), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, stdout, stderr := runGen(t, append([]string{"-checksums", path}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.stderr)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want empty", stdout)
			}
		})
	}
}

func TestRender_RejectsBrokenTemplate(t *testing.T) {
	t.Parallel()
	sums := map[string]string{ArchiveName(version, "linux", "amd64"): strings.Repeat("b", 64)}
	// Valid template syntax, but the sha256 ends up outside the platform.
	tmpl := "apiVersion: krew.googlecontainertools.github.com/v1alpha2\nkind: Plugin\nspec:\n  platforms:\n" +
		"    - uri: {{ uri \"linux\" \"amd64\" }}\n  sha256: {{ sha256 \"linux\" \"amd64\" }}\n"
	if _, err := Render(tmpl, version, "https://x", sums); err == nil {
		t.Error("Render accepted a manifest whose platform lacks sha256, selector and bin")
	}
}
