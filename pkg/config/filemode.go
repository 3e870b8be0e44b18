package config

import (
	"io/fs"
	"os"
	"runtime"
	"slices"
)

// readableSecrets warns about every configuration file that holds
// credentials (secrets.yaml, or any file with a value under a
// credential-like key) and that the group or others may read. Loading
// never changes a file's mode: a read-only command writes nothing, and a
// shared group may be deliberate; the warning names the fix instead.
// talosc init tightens the secrets.yaml it writes or appends to.
func readableSecrets(srcs []source, probs *collector) {
	if runtime.GOOS == "windows" {
		return // no Unix permission bits
	}
	for _, s := range srcs {
		if s.name != SecretsFile && !holdsCredential(s.root) {
			continue
		}
		fi, err := os.Stat(s.path)
		if err != nil || !GroupOrWorldReadable(fi.Mode()) {
			continue
		}
		probs.warnf("%s holds credentials and is readable by %s (mode %04o); run chmod 600 %s",
			s.name, readers(fi.Mode()), fi.Mode().Perm(), s.path)
	}
}

// GroupOrWorldReadable reports whether mode lets the group or others read
// the file.
func GroupOrWorldReadable(mode fs.FileMode) bool { return mode.Perm()&0o044 != 0 }

// readers names who may read a file of mode besides its owner.
func readers(mode fs.FileMode) string {
	switch p := mode.Perm(); {
	case p&0o040 != 0 && p&0o004 != 0:
		return "its group and everyone"
	case p&0o004 != 0:
		return "everyone"
	}
	return "its group"
}

// holdsCredential reports whether n has a non-null value under a
// credential-like key at any depth (see credentialKey).
func holdsCredential(n *node) bool {
	for _, e := range n.entries {
		if e.val.isNull() {
			continue
		}
		if credentialKey(e.key) && e.val.kind == scalarNode || holdsCredential(e.val) {
			return true
		}
	}
	return slices.ContainsFunc(n.items, holdsCredential)
}
