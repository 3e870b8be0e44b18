package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosc/talosc/pkg/backup"
	"github.com/talosc/talosc/pkg/kube"
)

// configMap checks "lab configmap DIR NS/NAME": it creates (applies) a
// ConfigMap through DIR's kubeconfig, an object a backup must hold.
func configMap(ts *testscript.TestScript, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lab configmap DIR NS/NAME")
	}
	ns, name, ok := strings.Cut(args[1], "/")
	if !ok {
		ts.Fatalf("lab configmap: %q is not NS/NAME", args[1])
	}
	kc, err := kube.Load(filepath.Join(ts.MkAbs(args[0]), "kubeconfig"), kube.Options{})
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts.Check(kc.Apply(ctx, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     map[string]any{"made": "by the e2e"},
	}, "talosc-e2e"))
}

// newestBackup checks "lab newest-backup DIR FILE": it copies the newest
// bundle of DIR's backup target (its records, as check reads them) to
// FILE, so age and tar can be run on a fixed name.
func newestBackup(ts *testscript.TestScript, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: lab newest-backup DIR FILE")
	}
	dir := filepath.Join(ts.MkAbs(args[0]), "backups")
	entries, err := os.ReadDir(dir)
	ts.Check(err)
	var bundles []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), backup.Ext) {
			bundles = append(bundles, e.Name())
		}
	}
	if len(bundles) == 0 {
		ts.Fatalf("no bundle in %s", dir)
	}
	slices.Sort(bundles) // names sort by time
	data, err := os.ReadFile(filepath.Join(dir, bundles[len(bundles)-1]))
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), data, 0o600))
}
