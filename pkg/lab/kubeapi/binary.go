package kubeapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// EnvBinary names the environment variable that points at a prebuilt
// kube-apiserver helper (CI sets it after "make kube-apiserver").
const EnvBinary = "TALOSC_KUBE_APISERVER"

// Where the helper's module and its Makefile output live in the repository.
const (
	helperModule = "lab/kube-apiserver"
	helperBinary = "bin/kube-apiserver"
	rootModule   = "github.com/talosc/talosc"
)

// buildTimeout bounds a lazy build (3–10 minutes cold on 2 cores).
const buildTimeout = 30 * time.Minute

// Binary finds the kube-apiserver helper: $TALOSC_KUBE_APISERVER if set,
// else bin/kube-apiserver of the repository when it is newer than the
// helper's sources, else it builds it there with the same flags as
// "make kube-apiserver" (minutes when the Go build cache is cold; logf says
// so first). logf may be nil.
func Binary(ctx context.Context, logf func(format string, args ...any)) (string, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("kubeapi: $%s: %w", EnvBinary, err)
		}
		return filepath.Abs(p)
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, helperBinary)
	src := filepath.Join(root, helperModule)
	if upToDate(bin, src) {
		return bin, nil
	}
	logf("kubeapi: building %s from %s (a cold build takes 3-10 minutes and ~2 GB of build cache; set $%s to skip)", helperBinary, helperModule, EnvBinary)
	start := time.Now()
	if err := build(ctx, src, bin); err != nil {
		return "", err
	}
	logf("kubeapi: built %s in %s", helperBinary, time.Since(start).Round(time.Second))
	return bin, nil
}

// upToDate reports whether bin exists and is newer than the helper's
// go.mod, go.sum and Go files (go build itself is the real judge, but
// running it costs seconds even when nothing changed).
func upToDate(bin, src string) bool {
	bi, err := os.Stat(bin)
	if err != nil {
		return false
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return false
	}
	for _, e := range entries {
		n := e.Name()
		if n != "go.mod" && n != "go.sum" && !strings.HasSuffix(n, ".go") {
			continue
		}
		si, err := e.Info()
		if err != nil || si.ModTime().After(bi.ModTime()) {
			return false
		}
	}
	return true
}

// build runs the same go build as the Makefile's kube-apiserver target, so
// both share the build cache, into a temporary file renamed over bin.
func build(ctx context.Context, src, bin string) error {
	version, err := kubernetesVersion(filepath.Join(src, "go.mod"))
	if err != nil {
		return err
	}
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return fmt.Errorf("kubeapi: odd k8s.io/kubernetes version %q", version)
	}
	const pkg = "k8s.io/component-base/version"
	ldflags := fmt.Sprintf("-s -w -X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=%[3]s -X %[1]s.gitMinor=%[4]s -X %[1]s.gitTreeState=clean",
		pkg, version, parts[0], parts[1])
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return fmt.Errorf("kubeapi: %w", err)
	}
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	defer os.Remove(tmp)
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "-C", src, "build", "-trimpath", "-buildvcs=false", "-o", tmp, "-ldflags", ldflags, ".")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubeapi: build %s: %w\n%s", src, err, tail(out.Bytes(), 4000))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return fmt.Errorf("kubeapi: %w", err)
	}
	return nil
}

// kubernetesVersion reads the k8s.io/kubernetes version the helper requires.
func kubernetesVersion(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", fmt.Errorf("kubeapi: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(f) >= 2 && f[0] == "k8s.io/kubernetes" && strings.HasPrefix(f[1], "v") {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("kubeapi: %s does not require k8s.io/kubernetes", gomod)
}

// repoRoot finds the talosc checkout: upwards from the working directory (a
// test runs in its package directory), else from this source file's path.
func repoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for {
			if isRepoRoot(dir) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", errors.New("kubeapi: no talosc checkout found to build the kube-apiserver helper in; set $" + EnvBinary)
}

func isRepoRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("module "+rootModule+"\n")) {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, helperModule, "go.mod"))
	return err == nil
}

// tail returns the last n bytes of b.
func tail(b []byte, n int) string {
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}
