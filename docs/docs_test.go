package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The document a bare section mark (§3.1) or one qualified by "reference"
// or "spec" names.
const reference = "reference-behaviour.md"

var (
	// idPattern matches the ids comments cite: invariants (I-F1, I-X2,
	// I-3) and plugin rules (RA-5, AR-3); CH- is kept for a charts
	// plugin.
	idPattern = regexp.MustCompile(`\b(?:I-[A-Z]{0,2}[0-9]+|(?:RA|AR|CH)-[0-9]+)\b`)
	// sectionPattern matches a section mark and the word before it (its
	// document, when that word is a file name).
	sectionPattern = regexp.MustCompile(`(\S*)\s*§([0-9]+(?:\.[0-9]+)*)`)
	// outsidePattern matches references into documents that are not in
	// the tree: the notes and audits the code was written from.
	outsidePattern = regexp.MustCompile(`\baudit(?:-2)?\s+[A-Z][0-9]+|shared/(?:notes|spec)`)
	// definitionPattern is how a document defines an id: a line that
	// starts with it in bold (optionally as a list item).
	definitionPattern = regexp.MustCompile(`^\s*(?:[-*]\s+)?\*\*([A-Z]+-[A-Z]{0,2}[0-9]+)\*\*`)
	// headingPattern is a numbered heading: "### 3.1 Converge steps".
	headingPattern = regexp.MustCompile(`^#{1,6}\s+([0-9]+(?:\.[0-9]+)*)\.?\s`)
)

// catalogue is what docs/ defines: ids, and the numbered sections of each
// document.
type catalogue struct {
	ids      map[string]string          // id -> document
	sections map[string]map[string]bool // document -> section numbers
}

func readCatalogue(t *testing.T) catalogue {
	t.Helper()
	c := catalogue{ids: map[string]string{}, sections: map[string]map[string]bool{}}
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c.sections[f] = map[string]bool{}
		for i, line := range strings.Split(string(data), "\n") {
			if m := headingPattern.FindStringSubmatch(line); m != nil {
				c.sections[f][m[1]] = true
			}
			ids := idPattern.FindAllString(line, -1)
			if m := definitionPattern.FindStringSubmatch(line); m != nil {
				ids = []string{m[1]}
			} else if !strings.HasPrefix(line, "#") {
				continue
			}
			for _, id := range ids {
				if prev, ok := c.ids[id]; ok {
					t.Errorf("docs/%s:%d: %s is defined twice (also in %s)", f, i+1, id, prev)
				}
				c.ids[id] = f
			}
		}
	}
	return c
}

// citation is one reference a comment makes.
type citation struct {
	pos  token.Position
	text string
	// problem is why it does not resolve; empty when it does.
	problem string
}

// commentLines are a comment group's lines with their positions, the
// comment markers removed.
func commentLines(fset *token.FileSet, g *ast.CommentGroup) (text string, lineAt func(off int) int) {
	var b strings.Builder
	var starts, lines []int
	for _, c := range g.List {
		for i, l := range strings.Split(c.Text, "\n") {
			l = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSuffix(l, "*/"), "//"), "/*")
			starts = append(starts, b.Len())
			lines = append(lines, fset.Position(c.Pos()).Line+i)
			b.WriteString(l)
			b.WriteString("\n")
		}
	}
	return b.String(), func(off int) int {
		i, _ := slices.BinarySearch(starts, off+1)
		return lines[i-1]
	}
}

// cite checks every reference of one file's comments against c.
func (c catalogue) cite(fset *token.FileSet, f *ast.File) []citation {
	var out []citation
	for _, g := range f.Comments {
		text, lineAt := commentLines(fset, g)
		pos := fset.Position(g.Pos())
		at := func(off int, ref, problem string) {
			p := pos
			p.Line = lineAt(off)
			out = append(out, citation{pos: p, text: ref, problem: problem})
		}
		for _, loc := range idPattern.FindAllStringIndex(text, -1) {
			id := text[loc[0]:loc[1]]
			problem := ""
			if _, ok := c.ids[id]; !ok {
				problem = "no document in docs/ defines it (a line starting **" + id + "**)"
			}
			at(loc[0], id, problem)
		}
		for _, m := range sectionPattern.FindAllStringSubmatchIndex(text, -1) {
			word, section := text[m[2]:m[3]], text[m[4]:m[5]]
			doc, problem := c.document(word, reference)
			if problem == "" && !c.sections[doc][section] {
				problem = fmt.Sprintf("docs/%s has no heading numbered %s", doc, section)
			}
			at(m[4], strings.TrimSpace(strings.Trim(word, "(")+" §"+section), problem)
		}
		for _, loc := range outsidePattern.FindAllStringIndex(text, -1) {
			at(loc[0], strings.Join(strings.Fields(text[loc[0]:loc[1]]), " "), "cites a document outside docs/; cite the rule in docs/ instead")
		}
	}
	return out
}

// fileName is a Markdown file name in a word ("docs/day2.md",
// "[day2.md](day2.md)").
var fileName = regexp.MustCompile(`[A-Za-z0-9_.-]+\.md`)

// document is the document a section mark preceded by word names; a bare
// mark names self.
func (c catalogue) document(word, self string) (doc, problem string) {
	word = strings.Trim(word, "(`'\",;:")
	names := fileName.FindAllString(word, -1)
	switch {
	case len(names) > 0:
		doc = names[len(names)-1]
		if _, ok := c.sections[doc]; !ok {
			return "", "docs/" + doc + " does not exist"
		}
		return doc, ""
	case word == "notes" || strings.HasPrefix(word, "audit"):
		return "", "cites " + word + ", which is not in docs/"
	case word == "reference" || word == "spec" || word == "reference's":
		return reference, ""
	default:
		return self, ""
	}
}

// sources are the module's Go files (tests included; testdata, vendored
// and hidden directories excluded).
func sources(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "bin" || name == "dist") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestEveryCitedIDResolves: every id (I-F1, RA-5, …) and section (§3.1,
// day2.md §4.2, plugins.md §2.3) a Go comment cites is defined by a
// document in docs/, and no comment cites a note or audit outside the
// tree. Each failure names file:line.
func TestEveryCitedIDResolves(t *testing.T) {
	t.Parallel()
	c := readCatalogue(t)
	fset := token.NewFileSet()
	total, unresolved := 0, 0
	for _, path := range sources(t) {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, ct := range c.cite(fset, f) {
			total++
			if ct.problem != "" {
				unresolved++
				t.Errorf("%s:%d: %s: %s", strings.TrimPrefix(ct.pos.Filename, "../"), ct.pos.Line, ct.text, ct.problem)
			}
		}
	}
	t.Logf("%d citations in comments, %d unresolved", total, unresolved)
}

// stepNames are the names of the nodes phase's steps, in order, read from
// the step table (the composite literal returned by (*run).steps).
func stepNames(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := filepath.Glob("../pkg/phase/nodes/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pkgs {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "steps" || fn.Recv == nil {
				continue
			}
			var names []string
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok || len(lit.Elts) == 0 {
					return true
				}
				if s, ok := lit.Elts[0].(*ast.BasicLit); ok && s.Kind == token.STRING {
					name, _ := strconv.Unquote(s.Value)
					names = append(names, name)
					return false
				}
				return true
			})
			return names
		}
	}
	t.Fatal("no steps method in pkg/phase/nodes")
	return nil
}

// documentedSteps are the step names of architecture.md's step table: the
// first cell of each row under the heading that names the step list.
func documentedSteps(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\|\\s*[0-9]+\\s*\\|\\s*`([a-z-]+)`")
	var names []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// TestArchitectureListsTheSteps: the step table of architecture.md is the
// nodes phase's step list, in order.
func TestArchitectureListsTheSteps(t *testing.T) {
	t.Parallel()
	if got, want := documentedSteps(t), stepNames(t); !slices.Equal(got, want) {
		t.Errorf("architecture.md lists the nodes steps\n  %v\nsteps() runs\n  %v", got, want)
	}
}

// TestDocumentsCiteOnlyWhatExists: the documents' own references (an id,
// a section of the same document, "plugins.md §2.7") resolve too, outside
// code blocks.
func TestDocumentsCiteOnlyWhatExists(t *testing.T) {
	t.Parallel()
	c := readCatalogue(t)
	for doc := range c.sections {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		code := false
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "```") {
				code = !code
			}
			if code {
				continue
			}
			for _, id := range idPattern.FindAllString(line, -1) {
				if _, ok := c.ids[id]; !ok {
					t.Errorf("docs/%s:%d: %s is defined nowhere in docs/", doc, i+1, id)
				}
			}
			for _, m := range sectionPattern.FindAllStringSubmatch(line, -1) {
				target, problem := c.document(m[1], doc)
				if problem == "" && !c.sections[target][m[2]] {
					problem = fmt.Sprintf("docs/%s has no heading numbered %s", target, m[2])
				}
				if problem != "" {
					t.Errorf("docs/%s:%d: %s §%s: %s", doc, i+1, m[1], m[2], problem)
				}
			}
		}
	}
}

// TestNoMergeConflictLeft: no document, nor the README or CONTRIBUTING,
// keeps a merge's conflict markers (Go files would not compile with them;
// Markdown renders them).
func TestNoMergeConflictLeft(t *testing.T) {
	t.Parallel()
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range append(docs, "../README.md", "../CONTRIBUTING.md") {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, marker := range []string{"<<<<<<< ", "=======", ">>>>>>> "} {
				if strings.HasPrefix(line, marker) && (marker != "=======" || line == marker) {
					t.Errorf("%s:%d: a merge conflict marker is left: %q", doc, i+1, line)
				}
			}
		}
	}
}
