package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"
)

// Options are the command-line flags.
type Options struct {
	Template  string
	Checksums string
	Version   string
	BaseURL   string
	Output    string // "" or "-" means stdout
}

// semver is the version shape krew accepts for spec.version: semantic
// versioning with a leading "v" (semver.org's regular expression).
var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// run is main without the process: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("krewmanifest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.Template, "template", "krew/talosc.yaml", "manifest template `FILE`")
	fs.StringVar(&o.Checksums, "checksums", "dist/checksums.txt", "sha256sum output for the release archives `FILE`")
	fs.StringVar(&o.Version, "version", "", "release `VERSION`, e.g. v0.1.0 (required)")
	fs.StringVar(&o.BaseURL, "base-url", "https://github.com/talosc/talosc/releases/download", "release download `URL`; the version and archive name are appended")
	fs.StringVar(&o.Output, "o", "-", "write the manifest to `FILE` instead of stdout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "krewmanifest: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := o.Run(stdout); err != nil {
		fmt.Fprintf(stderr, "krewmanifest: %v\n", err)
		return 1
	}
	return 0
}

// Run renders the manifest and writes it to o.Output (stdout for "-").
func (o *Options) Run(stdout io.Writer) error {
	if !semver.MatchString(o.Version) {
		return fmt.Errorf("version %q is not a semantic version with a leading v, as krew requires", o.Version)
	}
	tmpl, err := os.ReadFile(o.Template)
	if err != nil {
		return err
	}
	f, err := os.Open(o.Checksums)
	if err != nil {
		return err
	}
	defer f.Close()
	sums, err := ParseChecksums(f)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Checksums, err)
	}
	out, err := Render(string(tmpl), o.Version, strings.TrimSuffix(o.BaseURL, "/"), sums)
	if err != nil {
		return err
	}
	if o.Output == "" || o.Output == "-" {
		_, err = stdout.Write(out)
		return err
	}
	return os.WriteFile(o.Output, out, 0o644)
}

// ParseChecksums reads sha256sum output ("HASH  NAME" or "HASH *NAME" per
// line) into a map from file name to hash.
func ParseChecksums(r io.Reader) (map[string]string, error) {
	sums := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: want \"SHA256  FILE\", got %q", n, line)
		}
		sum, name := strings.ToLower(fields[0]), strings.TrimPrefix(fields[1], "*")
		if !sha256Hex.MatchString(sum) {
			return nil, fmt.Errorf("line %d: %q is not a sha256", n, fields[0])
		}
		if _, dup := sums[name]; dup {
			return nil, fmt.Errorf("line %d: %s listed twice", n, name)
		}
		sums[name] = sum
	}
	return sums, sc.Err()
}

// ArchiveName is the release archive of one platform, as "make dist" names it.
func ArchiveName(version, goos, goarch string) string {
	return fmt.Sprintf("talosc_%s_%s_%s.tar.gz", version, goos, goarch)
}

// Render executes the manifest template for version. Every platform the
// template names must have a checksum in sums, and every talosc archive in
// sums must be named by the template.
func Render(tmpl, version, baseURL string, sums map[string]string) ([]byte, error) {
	used := map[string]bool{}
	funcs := template.FuncMap{
		"uri": func(goos, goarch string) string {
			return baseURL + "/" + version + "/" + ArchiveName(version, goos, goarch)
		},
		"sha256": func(goos, goarch string) (string, error) {
			name := ArchiveName(version, goos, goarch)
			sum, ok := sums[name]
			if !ok {
				return "", fmt.Errorf("no checksum for %s (%s/%s)", name, goos, goarch)
			}
			used[name] = true
			return sum, nil
		},
	}
	t, err := template.New("manifest").Funcs(funcs).Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, struct{ Version string }{version}); err != nil {
		return nil, fmt.Errorf("render template: %w", err)
	}
	var unused []string
	prefix := "talosc_" + version + "_"
	for name := range sums {
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, ".tar.gz") && !used[name] {
			unused = append(unused, name)
		}
	}
	if len(unused) > 0 {
		slices.Sort(unused)
		return nil, fmt.Errorf("archives with a checksum but no platform in the template: %s", strings.Join(unused, ", "))
	}
	if err := check(buf.Bytes()); err != nil {
		return nil, fmt.Errorf("rendered manifest: %w", err)
	}
	return buf.Bytes(), nil
}

// manifest is the part of a krew manifest that check inspects.
type manifest struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Spec       struct {
		Version   string `yaml:"version"`
		Platforms []struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			URI    string `yaml:"uri"`
			SHA256 string `yaml:"sha256"`
			Bin    string `yaml:"bin"`
		} `yaml:"platforms"`
	} `yaml:"spec"`
}

// check parses the rendered manifest and checks what a template mistake
// could break: one YAML document, a uri, a sha256 and a bin for every
// platform.
func check(out []byte) error {
	var m manifest
	if err := yaml.Unmarshal(out, &m); err != nil {
		return err
	}
	var errs []error
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" {
		errs = append(errs, fmt.Errorf("apiVersion %q kind %q is not a krew v1alpha2 Plugin", m.APIVersion, m.Kind))
	}
	if len(m.Spec.Platforms) == 0 {
		errs = append(errs, errors.New("no platforms"))
	}
	for i, p := range m.Spec.Platforms {
		if p.Selector.MatchLabels["os"] == "" || p.Selector.MatchLabels["arch"] == "" {
			errs = append(errs, fmt.Errorf("platforms[%d]: selector needs os and arch", i))
		}
		if p.URI == "" || !sha256Hex.MatchString(p.SHA256) || p.Bin == "" {
			errs = append(errs, fmt.Errorf("platforms[%d]: needs uri, sha256 and bin", i))
		}
	}
	return errors.Join(errs...)
}
