package talosc

import (
	"os"
	"path/filepath"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
)

// clusterFiles are the files of a cluster directory that an output flag
// may never overwrite: the cluster's identity (CA keys, tokens), the client
// files and the configuration.
var clusterFiles = []string{config.TalosSecretsFile, config.TalosconfigFile, config.KubeconfigFile, config.SecretsFile, config.ClusterFile}

// refuseClusterFile refuses (exit 2, nothing written or run) an output
// file of flag that is one of the cluster directory's own files: plan --out
// and check --textfile replace their target, and a slip of the shell would
// replace the only copy of the cluster's CA. Paths are compared resolved,
// symlinks of the directories and of the file itself included, and an
// existing target also by identity (a hard link).
func refuseClusterFile(dir, flag, path string) error {
	if path == "" {
		return nil
	}
	target := resolved(path)
	for _, name := range clusterFiles {
		own := filepath.Join(dir, name)
		if target != resolved(own) && !sameFile(path, own) {
			continue
		}
		return cli.Usagef("%s %s: that is the cluster's %s (%s), which the output would replace; nothing was done: give a path outside the cluster's own files",
			flag, path, name, resolved(own))
	}
	return nil
}

// resolved is path absolute, with every symlink resolved: the file's own
// when it exists, else its directory's.
func resolved(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// sameFile reports two existing paths that are one file.
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
