// Package configdiff compares two Talos machine configurations document by
// document for `plan`, with every secret redacted first (reference §5.4).
//
// Both sides are parsed, redacted structurally (see Redact) and re-encoded
// before any line is compared, so a secret can never reach the output, not
// even as a context line of a hunk that starts inside a certificate or a
// manifest body. A change that is only in a secret still shows: a redacted
// value becomes "<redacted:xxxxxxxx>", a keyed digest of the value that is
// equal on both sides when the value is and differs when it changed. The
// digest key is derived from the full inputs of the call, so it cannot be
// computed (or brute-forced) from the output alone and means nothing across
// calls.
package configdiff

import (
	"fmt"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/textdiff"
)

// LegacyDocument is the identity of the v1alpha1 document (the one with
// machine:/cluster: and no kind).
const LegacyDocument = "v1alpha1"

// Diff returns a unified diff of the redacted documents of two multi-document
// machine configurations, or "" when they are equal after redaction.
//
// Documents are matched by apiVersion, kind and name (the v1alpha1 document
// as one); each changed, added or removed document gets its own
// "--- a/<id>" / "+++ b/<id>" section, in the order of the new
// configuration followed by the removed documents in their old order.
// Added documents diff against /dev/null, removed ones to /dev/null. Every
// occurrence of a value in known (secrets.yaml's) is redacted too, see
// Redact.
func Diff(oldYAML, newYAML []byte, known ...string) (string, error) {
	r := newRedactor(oldYAML, newYAML).knowing(known)
	oldDocs, err := r.documents(oldYAML)
	if err != nil {
		return "", fmt.Errorf("old config: %w", err)
	}
	newDocs, err := r.documents(newYAML)
	if err != nil {
		return "", fmt.Errorf("new config: %w", err)
	}
	oldByID := map[string]string{}
	for _, d := range oldDocs {
		oldByID[d.id] = d.text
	}
	var out strings.Builder
	seen := map[string]bool{}
	for _, d := range newDocs {
		seen[d.id] = true
		before, existed := oldByID[d.id]
		if err := section(&out, d.id, before, existed, d.text, true); err != nil {
			return "", err
		}
	}
	for _, d := range oldDocs {
		if !seen[d.id] {
			if err := section(&out, d.id, d.text, true, "", false); err != nil {
				return "", err
			}
		}
	}
	return out.String(), nil
}

// section appends the diff of one document, nothing when it is unchanged.
func section(out *strings.Builder, id, before string, hadBefore bool, after string, hasAfter bool) error {
	if hadBefore && hasAfter && before == after {
		return nil
	}
	from, to := "a/"+id, "b/"+id
	if !hadBefore {
		from = "/dev/null"
	}
	if !hasAfter {
		to = "/dev/null"
	}
	d, err := textdiff.DiffWithCustomPaths(before, after, from, to)
	if err != nil {
		return fmt.Errorf("diff %s: %w", id, err)
	}
	out.WriteString(d)
	return nil
}

// document is one redacted document and its identity.
type document struct {
	id   string
	text string
}

// documents parses, redacts and encodes every document of a config and
// names each one. A repeated identity (which Talos itself refuses) is
// suffixed with #2, #3… so nothing is dropped.
func (r *redactor) documents(b []byte) ([]document, error) {
	roots, err := r.parse(b)
	if err != nil {
		return nil, err
	}
	docs := make([]document, 0, len(roots))
	count := map[string]int{}
	for _, root := range roots {
		id := identity(root)
		count[id]++
		if n := count[id]; n > 1 {
			id = fmt.Sprintf("%s#%d", id, n)
		}
		text, err := encode(root)
		if err != nil {
			return nil, fmt.Errorf("document %s: %w", id, err)
		}
		docs = append(docs, document{id: id, text: text})
	}
	return docs, nil
}
