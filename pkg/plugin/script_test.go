package plugin_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/state"
)

// writeFile writes an executable (mode 0755) or plain file.
func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

// descriptorJSON is what a well-behaved tc-NAME describe prints.
func descriptorJSON(t *testing.T, name string, after ...string) string {
	t.Helper()
	d := map[string]any{
		"name": name, "version": "1.0", "after": after, "configSections": []string{name},
		"hooks":            []string{"configured", "converge", "status"},
		"stateAPIVersions": []string{state.APIVersion},
	}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// describeScript is a plugin that answers describe with desc and otherwise
// runs rest.
func describeScript(desc, rest string) string {
	return fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = describe ]; then\n  cat <<'EOF'\n%s\nEOF\n  exit 0\nfi\n%s\n", desc, rest)
}

// sectionScript is a plugin whose hooks copy stdin to stdout with its own
// section (JSON text sec, no '|' or '&') added in front of the others. It
// relies on state.Write's compact encoding.
func sectionScript(name, sec, extra string) string {
	entry := fmt.Sprintf("%q:%s", name, sec)
	return fmt.Sprintf(`#!/bin/sh
%s
in=$(cat)
printf '%%s\n' "$in" | sed -e 's|"sections":{}|"sections":{%s}|;t' -e 's|"sections":{|"sections":{%s,|'
`, extra, entry, entry)
}

// doc returns a document with the given sections (raw JSON).
func doc(t *testing.T, sections map[string]string) *state.Document {
	t.Helper()
	d := state.New("demo", "converge")
	for name, raw := range sections {
		var s state.Section
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatal(err)
		}
		if err := d.Put(name, s); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// pathList joins dirs into a PATH value.
func pathList(dirs ...string) string { return strings.Join(dirs, string(os.PathListSeparator)) }
