package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// source is one parsed configuration file.
type source struct {
	name string // relative to the cluster directory, slash-separated
	path string // the file read, symlinks resolved for includes
	root *node  // the file's top-level mapping
}

// loader reads cluster.yaml and the files it includes (§2.2 rule 6).
type loader struct {
	dir     string // absolute cluster directory
	realDir string // dir with symlinks resolved
	opts    LoadOptions
	probs   *collector
	include []string       // the valid include entries, as written
	names   []string       // include entries by index ("" where invalid)
	reals   map[string]int // resolved path of each readable include -> its index
}

// sources reads cluster.yaml and every include file, in include order. An
// unreadable cluster.yaml is an error; everything else is a problem.
func (l *loader) sources() ([]source, error) {
	path := filepath.Join(l.dir, ClusterFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no %s in %s: %w", ClusterFile, l.dir, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("read cluster configuration: %w", err)
	}
	if l.realDir, err = filepath.EvalSymlinks(l.dir); err != nil {
		return nil, fmt.Errorf("read cluster configuration: %w", err)
	}
	root, ok := parseFile(ClusterFile, path, data, l.probs)
	if !ok {
		return nil, nil
	}
	srcs := []source{{name: ClusterFile, path: path, root: root}}
	inc, _ := root.remove("include")
	clusterReal, _ := filepath.EvalSymlinks(path)
	l.names = l.includeNames(inc.val)
	for i, name := range l.names {
		if src, ok := l.readInclude(i, name, inc.val.items[i], clusterReal); ok {
			srcs = append(srcs, src)
		}
	}
	l.secretsListed()
	return srcs, nil
}

// includeNames decodes include: [file, ...]; entries that are not file
// names become problems and empty strings in the result.
func (l *loader) includeNames(n *node) []string {
	if n.isNull() {
		return nil
	}
	if n.kind != seqNode {
		l.probs.addf(n.file, n.line, "include", "include must be a list of file names, e.g. include: [%s], not %s", SecretsFile, describe(n))
		n.items = nil
		return nil
	}
	names := make([]string, len(n.items))
	for i, item := range n.items {
		if item.kind != scalarNode || item.tag != "!!str" || strings.TrimSpace(item.value) == "" {
			l.probs.addf(item.file, item.line, "include["+strconv.Itoa(i)+"]", "include[%d] must be a file name, not %s", i, describe(item))
			continue
		}
		names[i] = item.value
		l.include = append(l.include, item.value)
	}
	return names
}

// readInclude resolves, checks and parses include[i].
func (l *loader) readInclude(i int, name string, at *node, clusterReal string) (source, bool) {
	if name == "" {
		return source{}, false
	}
	path := "include[" + strconv.Itoa(i) + "]"
	fail := func(problem string) (source, bool) {
		l.probs.add(at.file, at.line, path, path+" "+problem)
		return source{}, false
	}
	full, display, problem := l.includePath(name)
	if problem != "" {
		return fail(problem)
	}
	real, err := filepath.EvalSymlinks(full)
	if errors.Is(err, fs.ErrNotExist) {
		if l.opts.MissingIncludesOK {
			l.probs.warnf("include file %s is missing; reading it as empty", display)
			return source{}, false
		}
		return fail(fmt.Sprintf("%q does not exist", name))
	}
	if err != nil {
		return fail(fmt.Sprintf("%q cannot be read: %v", name, err))
	}
	if problem := l.includeTarget(name, real, clusterReal); problem != "" {
		return fail(problem)
	}
	l.reals[real] = i
	return l.parseInclude(display, real)
}

// includePath resolves an include's name against the cluster directory:
// its full path and its display name (slash-separated, relative), or what
// is wrong with it (it names the directory, lies outside it, or is
// cluster.yaml).
func (l *loader) includePath(name string) (full, display, problem string) {
	full = name
	if !filepath.IsAbs(full) {
		full = filepath.Join(l.dir, name)
	}
	rel, err := filepath.Rel(l.dir, filepath.Clean(full))
	if err == nil && rel == "." {
		return "", "", fmt.Sprintf("%q is not a regular file", name)
	}
	if err != nil || !filepath.IsLocal(rel) {
		return "", "", fmt.Sprintf("%q is outside the cluster directory", name)
	}
	display = filepath.ToSlash(rel)
	if display == ClusterFile {
		return "", "", fmt.Sprintf("may not list %s (it is always read first)", ClusterFile)
	}
	return full, display, ""
}

// includeTarget says what is wrong with the file an include resolves to
// (real, symlinks followed): outside the cluster directory, cluster.yaml
// itself, a file already included, or not a regular file; "" when none.
func (l *loader) includeTarget(name, real, clusterReal string) string {
	if realRel, err := filepath.Rel(l.realDir, real); err != nil || !filepath.IsLocal(realRel) {
		return fmt.Sprintf("%q resolves to %s, outside the cluster directory", name, real)
	}
	if real == clusterReal {
		return fmt.Sprintf("%q is %s (through a symlink); it may not be listed", name, ClusterFile)
	}
	if j, dup := l.reals[real]; dup {
		return fmt.Sprintf("%q is the same file as include[%d] (%q)", name, j, l.names[j])
	}
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
		return fmt.Sprintf("%q is not a regular file", name)
	}
	return ""
}

func (l *loader) parseInclude(display, real string) (source, bool) {
	data, err := os.ReadFile(real)
	if err != nil {
		l.probs.addf(display, 0, "", "could not read %s: %v", real, err)
		return source{}, false
	}
	root, ok := parseFile(display, filepath.Join(l.dir, filepath.FromSlash(display)), data, l.probs)
	if !ok {
		return source{}, false
	}
	if e, nested := root.remove("include"); nested && !e.val.isNull() {
		l.probs.addf(display, e.line, "include", "include is only allowed in %s; included files cannot include other files", ClusterFile)
	}
	return source{name: display, path: real, root: root}, true
}

// secretsListed refuses a secrets.yaml that cluster.yaml does not include:
// its credentials would be silently ignored.
func (l *loader) secretsListed() {
	path := filepath.Join(l.dir, SecretsFile)
	if _, err := os.Lstat(path); err != nil {
		return
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		if _, ok := l.reals[real]; ok {
			return
		}
	}
	for _, name := range l.include {
		if filepath.Clean(name) == SecretsFile {
			return // listed, but missing or refused: reported there
		}
	}
	l.probs.addf(ClusterFile, 0, "include", "%s exists but %s does not include it; add include: [%s] so its credentials are not silently ignored",
		SecretsFile, ClusterFile, SecretsFile)
}
