package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// RecipientEdit is the change that adds one recipient to backup.recipients:
// the configuration file that gets it and that file's new text.
type RecipientEdit struct {
	// File is the file edited, relative to the cluster directory.
	File string
	// Path is the file to write, symlinks resolved.
	Path string
	// Data is the file's new content.
	Data []byte
	// Mode is the file's permission bits, which the new content keeps.
	Mode fs.FileMode
}

// AddBackupRecipient returns the edit that adds recipient to
// backup.recipients, without writing it. It edits the file that already
// lists recipients, else the first file with a backup section (cluster.yaml
// before its includes), else cluster.yaml: the merged files never set the
// list twice. The text is edited line by line, so comments, key order and
// alignment stay as they were; the recipient goes first in an existing list,
// and a new backup section goes at the end of the file, after a blank line.
func AddBackupRecipient(dir, recipient string) (*RecipientEdit, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster directory %s: %w", dir, err)
	}
	probs := &collector{}
	l := &loader{dir: abs, opts: LoadOptions{MissingIncludesOK: true}, probs: probs, reals: map[string]int{}}
	srcs, err := l.sources()
	if err != nil {
		return nil, err
	}
	if len(probs.problems) > 0 {
		return nil, probs.problems
	}
	src := backupSource(srcs)
	path, err := filepath.EvalSymlinks(src.path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", src.name, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", src.name, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", src.name, err)
	}
	out, err := addRecipient(data, recipient)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; add %s to backup.recipients there by hand", src.name, err, recipient)
	}
	return &RecipientEdit{File: src.name, Path: path, Data: out, Mode: fi.Mode().Perm()}, nil
}

// backupSource picks the file backup init edits (see AddBackupRecipient).
func backupSource(srcs []source) source {
	section := -1
	for i, s := range srcs {
		e := s.root.index("backup")
		if e < 0 || s.root.entries[e].val.isNull() {
			continue
		}
		b := s.root.entries[e].val
		if r := b.index("recipients"); r >= 0 && !b.entries[r].val.isNull() {
			return s
		}
		if section < 0 {
			section = i
		}
	}
	return srcs[max(section, 0)]
}

// addRecipient adds r to backup.recipients in the YAML text data, and
// checks that the result reads as data with r added and nothing else.
func addRecipient(data []byte, r string) ([]byte, error) {
	top, err := parseYAML(data)
	if err != nil {
		return nil, fmt.Errorf("cannot be parsed: %w", err)
	}
	t := newTextEdit(data)
	if err := t.addRecipient(top, r); err != nil {
		return nil, err
	}
	out := []byte(strings.Join(t.lines, ""))
	if !sameButRecipient(data, out, r) {
		return nil, errors.New("its layout is one talosc cannot edit safely")
	}
	return out, nil
}

// textEdit is a file's lines, each with its line break.
type textEdit struct {
	lines []string
	nl    string
}

func newTextEdit(data []byte) *textEdit {
	t := &textEdit{nl: "\n"}
	s := string(data)
	if strings.Contains(s, "\r\n") {
		t.nl = "\r\n"
	}
	if s != "" {
		t.lines = strings.SplitAfter(s, "\n")
		if t.lines[len(t.lines)-1] == "" {
			t.lines = t.lines[:len(t.lines)-1]
		}
	}
	return t
}

func (t *textEdit) addRecipient(top *yaml.Node, r string) error {
	if top == nil {
		return t.appendSection(0, r)
	}
	if top.Kind != yaml.MappingNode || top.Style&yaml.FlowStyle != 0 {
		return errors.New("the file is not a block mapping of keys")
	}
	k, v := mapValue(top, "backup")
	switch {
	case k == nil:
		return t.appendSection(top.Content[0].Column-1, r)
	case v.Tag == "!!null":
		return t.underKey(k, v, "recipients:", "  - "+r)
	case v.Kind != yaml.MappingNode:
		return errors.New("backup is not a mapping")
	}
	return t.addToSection(v, r)
}

// addToSection adds r to the backup mapping v.
func (t *textEdit) addToSection(v *yaml.Node, r string) error {
	rk, rv := mapValue(v, "recipients")
	switch {
	case rk == nil && v.Style&yaml.FlowStyle != 0:
		return t.afterOpen(v, '{', "recipients: ["+r+"]", len(v.Content) > 0)
	case rk == nil:
		return t.insert(v.Content[0].Line-1, v.Content[0].Column-1, "recipients:", "  - "+r)
	case rv.Tag == "!!null":
		return t.underKey(rk, rv, "- "+r)
	case rv.Kind != yaml.SequenceNode:
		return errors.New("backup.recipients is not a list")
	case rv.Style&yaml.FlowStyle != 0 || len(rv.Content) == 0:
		return t.afterOpen(rv, '[', r, len(rv.Content) > 0)
	}
	first := rv.Content[0]
	line := []rune(t.lines[first.Line-1])
	dash := strings.LastIndexByte(string(line[:min(first.Column-1, len(line))]), '-')
	if dash < 0 {
		return errors.New("backup.recipients has an item without its dash")
	}
	return t.insert(first.Line-1, len([]rune(string(line)[:dash])), "- "+r)
}

// appendSection appends a backup section listing r, after a blank line
// when the file has any.
func (t *textEdit) appendSection(indent int, r string) error {
	lines := []string{"backup:", "  recipients:", "    - " + r}
	if len(t.lines) > 0 {
		lines = append([]string{""}, lines...)
	}
	return t.insert(len(t.lines), indent, lines...)
}

// mapValue finds key in mapping m.
func mapValue(m *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// insert puts lines, each indented by indent spaces, before line index at
// (len(t.lines) appends).
func (t *textEdit) insert(at, indent int, lines ...string) error {
	if at < 0 || at > len(t.lines) {
		return errors.New("a position is outside the file")
	}
	if at == len(t.lines) && at > 0 && !strings.HasSuffix(t.lines[at-1], "\n") {
		t.lines[at-1] += t.nl
	}
	add := make([]string, len(lines))
	for i, l := range lines {
		if l != "" {
			l = strings.Repeat(" ", indent) + l
		}
		add[i] = l + t.nl
	}
	t.lines = append(t.lines[:at], append(add, t.lines[at:]...)...)
	return nil
}

// underKey fills key k, whose value v is null, with a block of lines
// indented two spaces deeper; an explicit ~ or null is removed first.
func (t *textEdit) underKey(k, v *yaml.Node, lines ...string) error {
	if v.Value != "" {
		if err := t.splice(v, len([]rune(v.Value)), ""); err != nil {
			return err
		}
	}
	return t.insert(k.Line, k.Column+1, lines...)
}

// afterOpen inserts text after the opening bracket of the flow collection
// v, followed by ", " when the collection has items.
func (t *textEdit) afterOpen(v *yaml.Node, open rune, text string, items bool) error {
	if items {
		text += ", "
	}
	return t.splice(v, 0, string(open)+text, open)
}

// splice replaces n runes at v's position with text; when want is given,
// the rune there must be it (and it is part of what is replaced).
func (t *textEdit) splice(v *yaml.Node, n int, text string, want ...rune) error {
	if v.Line < 1 || v.Line > len(t.lines) {
		return errors.New("a position is outside the file")
	}
	line := []rune(t.lines[v.Line-1])
	at := v.Column - 1
	if len(want) > 0 {
		n = 1
	}
	if at < 0 || at+n > len(line) || len(want) > 0 && line[at] != want[0] {
		return errors.New("a value is not where the parser put it")
	}
	t.lines[v.Line-1] = string(line[:at]) + text + string(line[at+n:])
	return nil
}

// sameButRecipient reports whether after reads as before with r first in
// backup.recipients.
func sameButRecipient(before, after []byte, r string) bool {
	var want, got map[string]any
	if yaml.Unmarshal(before, &want) != nil || yaml.Unmarshal(after, &got) != nil {
		return false
	}
	if want == nil {
		want = map[string]any{}
	}
	b, _ := want["backup"].(map[string]any)
	if b == nil {
		b = map[string]any{}
	}
	list, _ := b["recipients"].([]any)
	b["recipients"] = append([]any{r}, list...)
	want["backup"] = b
	return reflect.DeepEqual(want, got)
}
