package plugin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Sibling finds the executable name next to self (a talosc binary) first,
// then in the absolute entries of pathEnv (an executable found through a
// relative PATH entry is refused, as exec.ErrDot does). It is how the front
// door finds its phases and a phase finds tc-nodes.
func Sibling(name, self, pathEnv string) (string, error) {
	var dirs []string
	if self != "" {
		dirs = append(dirs, filepath.Dir(self))
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d != "" && filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found next to %s or on PATH: %w; reinstall talosc", name, self, exec.ErrNotFound)
}
