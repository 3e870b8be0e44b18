package kubeapi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

func TestBinary_FromEnv(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kube-apiserver")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvBinary, bin)
	got, err := Binary(t.Context(), nil)
	if err != nil || got != bin {
		t.Fatalf("Binary() = %q, %v; want %q", got, err, bin)
	}
	t.Setenv(EnvBinary, filepath.Join(dir, "missing"))
	if _, err := Binary(t.Context(), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Binary() with a missing $%s: err = %v, want ErrNotExist", EnvBinary, err)
	}
}

func TestUpToDate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	write := func(path string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(src, "main.go"), old)
	write(filepath.Join(src, "go.sum"), old)
	write(filepath.Join(src, "README"), time.Now()) // not a source: ignored
	if upToDate(bin, src) {
		t.Error("upToDate without a binary = true")
	}
	write(bin, time.Now())
	if !upToDate(bin, src) {
		t.Error("upToDate with a newer binary = false")
	}
	write(filepath.Join(src, "go.mod"), time.Now().Add(time.Minute))
	if upToDate(bin, src) {
		t.Error("upToDate after go.mod changed = true")
	}
}

func TestHelperModule(t *testing.T) {
	t.Parallel()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	v, err := kubernetesVersion(filepath.Join(root, helperModule, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if v != DefaultKubeletVersion {
		t.Errorf("helper's k8s.io/kubernetes = %s, want %s (DefaultKubeletVersion follows the server)", v, DefaultKubeletVersion)
	}
	// The helper is its own module: "go test ./..." at the root must not
	// reach it (a go.work would, and would pin the product's client-go).
	if _, err := os.Stat(filepath.Join(root, "go.work")); err == nil {
		t.Error("go.work exists at the repository root")
	}
}

func TestStart_Validates(t *testing.T) {
	t.Parallel()
	ca, caKey := testCA(t)
	base := Options{Binary: "/nonexistent", Address: "127.40.0.9:0", CACertPEM: ca, CAKeyPEM: caKey, DataDir: t.TempDir()}
	for name, tc := range map[string]struct {
		edit func(*Options)
		want string
	}{
		"not loopback":     {func(o *Options) { o.Address = "192.0.2.1:6443" }, "loopback"},
		"hostname":         {func(o *Options) { o.Address = "localhost:6443" }, "loopback"},
		"no port":          {func(o *Options) { o.Address = "127.40.0.9" }, "missing port"},
		"no data dir":      {func(o *Options) { o.DataDir = "" }, "DataDir"},
		"no CA":            {func(o *Options) { o.CACertPEM = nil }, "CACertPEM"},
		"nothing to serve": {func(o *Options) { o.CAKeyPEM = nil }, "ServingCertPEM"},
		"cert without key": {func(o *Options) { o.ServingCertPEM = ca }, "ServingKeyPEM"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := base
			tc.edit(&o)
			_, err := Start(t.Context(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start() err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	o := base
	o.Address = "198.51.100.1:6443"
	if _, err := Start(t.Context(), o); !errors.Is(err, labnet.ErrNotLoopback) {
		t.Errorf("Start(192.168.1.1) err = %v, want labnet.ErrNotLoopback", err)
	}
}

func TestStart_HelperExitsEarly(t *testing.T) {
	t.Parallel()
	ca, caKey := testCA(t)
	bin := filepath.Join(t.TempDir(), "fake-apiserver")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'etcd: no space left' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := Start(ctx, Options{Binary: bin, Address: "127.40.0.9:0", CACertPEM: ca, CAKeyPEM: caKey, DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("Start() err = %v, want the exit and the log's tail", err)
	}
}

func TestApiserverArgs_LoopbackAndFrontProxy(t *testing.T) {
	t.Parallel()
	o := Options{DataDir: "/d", StartTimeout: time.Minute, ExtraArgs: []string{"--v=2"}}
	f := pkiFiles{caFile: "/d/pki/ca.crt", certFile: "/d/pki/apiserver.crt", keyFile: "/d/pki/apiserver.key", frontProxyCA: "/d/pki/front-proxy-ca.crt", tokenFile: "/d/pki/tokens.csv"}
	got := apiserverArgs(o, f, "127.40.0.1:0")
	want := []string{
		"-listen", "127.40.0.1:0", "-client-ca-file", "/d/pki/ca.crt",
		"-tls-cert-file", "/d/pki/apiserver.crt", "-tls-private-key-file", "/d/pki/apiserver.key",
		"-data-dir", "/d", "-ready-file", "/d/ready", "-ready-timeout", "60s", "--",
		"--token-auth-file=/d/pki/tokens.csv",
		"--requestheader-client-ca-file=/d/pki/front-proxy-ca.crt",
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--v=2",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("apiserverArgs (-want +got):\n%s", d)
	}
}
