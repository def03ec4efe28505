package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeLines is the front door's length: what a newcomer reads before the
// course, with the rest in docs/.
const readmeLines = 150

func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeLines {
		t.Errorf("README.md has %d lines, want at most %d: move the detail to a page under docs/ and link it", n, readmeLines)
	}
}

// link is a markdown link: [text](target).
var link = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)

// TestMechanismTable checks every row of the README's mechanism table: the
// code and the test it names are declared in the files it links, and the
// command is a lab's.
func TestMechanismTable(t *testing.T) {
	rows := mechanismRows(t)
	if len(rows) < 12 {
		t.Fatalf("the mechanism table has %d rows, want one for each of at least 12 mechanisms", len(rows))
	}
	for _, row := range rows {
		if len(row) != 4 {
			t.Errorf("row %q: want 4 cells (mechanism, code, command, test)", row)
			continue
		}
		for _, cell := range []string{row[1], row[3]} {
			links := link.FindAllStringSubmatch(cell, -1)
			if len(links) == 0 {
				t.Errorf("%s: the cell %q links no declaration", row[0], cell)
			}
			for _, l := range links {
				name, file := strings.Trim(l[1], "`"), l[2]
				if err := declared(filepath.Join(root, filepath.FromSlash(file)), name); err != nil {
					t.Errorf("%s: %v", row[0], err)
				}
			}
		}
		if !regexp.MustCompile("^`mercado lab( [a-z0-9-]+)?`$").MatchString(row[2]) {
			t.Errorf("%s: the command %q is not `mercado lab NAME`", row[0], row[2])
		}
	}
}

// mechanismRows returns the cells of the table under the README's heading
// "The mechanisms and where they live", header and rule left out.
func mechanismRows(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The mechanisms and where they live\n")
	if !ok {
		t.Fatal(`README.md has no section "The mechanisms and where they live"`)
	}
	var rows [][]string
	for line := range strings.Lines(section) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		var cells []string
		for c := range strings.SplitSeq(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	if len(rows) > 0 {
		rows = rows[1:] // the header
	}
	return rows
}

// declared reports whether the Go file declares name: a function, a method
// written Type.Method, or a type.
func declared(file, name string) error {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	recv, fn, isMethod := strings.Cut(name, ".")
	if !isMethod {
		fn, recv = name, ""
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name == fn && receiver(d) == recv {
				return nil
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && !isMethod && ts.Name.Name == name {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("%s declares no %s", file, name)
}

// receiver is the name of a method's receiver type, "" for a function.
func receiver(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	e := d.Recv.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestLinksResolve follows every relative link of the README and the docs:
// its file exists and, for a page, its #anchor is one of the page's
// headings.
func TestLinksResolve(t *testing.T) {
	files, err := docFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range link.FindAllStringSubmatch(withoutCode(string(b)), -1) {
			target := l[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := f
			if file != "" {
				dest = path.Join(path.Dir(filepath.ToSlash(f)), file)
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
				t.Errorf("%s: the link %q leads nowhere: %v", f, target, err)
				continue
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if !hasAnchor(t, dest, anchor) {
				t.Errorf("%s: the link %q names no heading of %s", f, target, dest)
			}
		}
	}
}

// TestDocsIndexLinksEveryPage: docs/README.md is the one index, so every
// page under docs/ is reachable from it.
func TestDocsIndexLinksEveryPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range link.FindAllStringSubmatch(string(b), -1) {
		file, _, _ := strings.Cut(l[2], "#")
		linked[path.Clean(file)] = true
	}
	files, err := docFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rel, ok := strings.CutPrefix(filepath.ToSlash(f), "docs/")
		if !ok || rel == "README.md" {
			continue
		}
		if !linked[rel] {
			t.Errorf("docs/README.md does not link %s", f)
		}
	}
}

// outsideFences blanks the lines of fenced blocks, which hold no links or
// headings.
func outsideFences(s string) string {
	var b strings.Builder
	fenced := false
	for line := range strings.Lines(s) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			line = "\n"
		}
		if fenced {
			line = "\n"
		}
		b.WriteString(line)
	}
	return b.String()
}

// withoutCode blanks fenced blocks and code spans, where brackets are not
// links. A link whose text is a code span keeps its brackets and target.
func withoutCode(s string) string {
	return inlineCode.ReplaceAllStringFunc(outsideFences(s), func(c string) string { return strings.Repeat(" ", len(c)) })
}

var inlineCode = regexp.MustCompile("`[^`\n]*`")

// hasAnchor reports whether page has a heading whose GitHub anchor is
// anchor.
func hasAnchor(t *testing.T, page, anchor string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(outsideFences(string(b))) {
		if h, ok := strings.CutPrefix(line, "#"); ok && slug(strings.TrimLeft(h, "#")) == anchor {
			return true
		}
	}
	return false
}

// slug is GitHub's anchor for a heading: lower case, punctuation dropped,
// spaces turned into hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
