package docs_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The convention itself: what a marker says, and what fails the docs.
func TestMarkers(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		problem  string // "" when the file is fine
	}{
		{"an unmarked sh block", "text\n```sh\ngo run ./cmd/mercado lab\n```\n", "unmarked ```sh block"},
		{"an unmarked bash block", "```bash\ncurl -s localhost:8080\n```\n", "unmarked ```bash block"},
		{"a marker a blank line away", "<!-- runnable -->\n\n```sh\ntrue\n```\n", "unmarked ```sh block"},
		{"commands fenced without a language", "```\ngo test ./...\n```\n", "fenced as ```sh"},
		{"commands after a variable, fenced without a language", "```\nMERCADO_SOAK=3m go test ./lab/chaos/\n```\n", "fenced as ```sh"},
		{"output fenced without a language", "```\nNAIVE: every hop uses its own cap\n```\n", ""},
		{"not runnable without a reason", "<!-- not runnable: -->\n```sh\ntrue\n```\n", "says why"},
		{"not runnable with a reason", "<!-- not runnable: needs Docker -->\n```sh\ndocker ps\n```\n", ""},
		{"an unknown option", "<!-- runnable: status=201 -->\n```sh\ntrue\n```\n", "option status: unknown"},
		{"a bad regular expression", "<!-- runnable: expect=`(` -->\n```sh\ntrue\n```\n", "option expect"},
		{"an unclosed backquote", "<!-- runnable: expect=`201 -->\n```sh\ntrue\n```\n", "never closed"},
		{"a shop nobody named", "<!-- runnable: shop=naive -->\n```sh\ntrue\n```\n", "names no server block"},
		{"a shop named below its use", "<!-- runnable: shop=naive -->\n```sh\ntrue\n```\n<!-- runnable: server name=naive -->\n```sh\nmercado serve all\n```\n", "names no server block"},
		{"a server that expects output", "<!-- runnable: server expect=`x` -->\n```sh\nmercado serve all\n```\n", "drop exit and expect"},
		{"together without server", "<!-- runnable: together -->\n```sh\ntrue\n```\n", "go with server"},
		{"a marker before a json block", "<!-- runnable -->\n```json\n{}\n```\n", "not ```json"},
		{"a named shop and its client", "<!-- runnable: server name=naive -->\n```sh\nmercado serve all --mode naive\n```\n<!-- runnable: shop=naive exit=28 -->\n```sh\ncurl --max-time 1 localhost:8080\n```\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "page.md")
			if err := os.WriteFile(path, []byte(tc.md), 0o644); err != nil {
				t.Fatal(err)
			}
			blocks, err := readBlocks(path, "page.md")
			if err != nil {
				t.Fatal(err)
			}
			_, _, problems := runnables(blocks)
			switch {
			case tc.problem == "" && len(problems) > 0:
				t.Errorf("want no problem, got %v", problems)
			case tc.problem != "" && len(problems) != 1:
				t.Errorf("want one problem with %q, got %v", tc.problem, problems)
			case tc.problem != "" && !strings.Contains(problems[0].Error(), tc.problem):
				t.Errorf("want a problem with %q, got %v", tc.problem, problems[0])
			}
		})
	}
}

func TestParseMark(t *testing.T) {
	s, ok, err := parseMark("<!-- runnable: shop=naive exit=28 after=12s timeout=2m expect=`^000 after 1\\.2\\d*s$` expect=`two words` -->")
	if !ok || err != nil {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	if !s.runnable || s.shop != "naive" || !slices.Equal(s.exits, []int{28}) || s.after != 12*time.Second || s.timeout != 2*time.Minute || len(s.expect) != 2 {
		t.Errorf("got %+v", s)
	}
	if !s.expect[0].MatchString("curl\n000 after 1.201s\n") || !s.expect[1].MatchString("two words") {
		t.Errorf("expectations %v do not match line by line", s.expect)
	}
	if s, _, err := parseMark("<!-- runnable: exit=0|4 -->"); err != nil || !s.exitOK(0) || !s.exitOK(4) || s.exitOK(3) || s.wantExit() != "0 or 4" {
		t.Errorf("exit=0|4 is %v (err %v): want 0 and 4 taken, 3 refused", s.exits, err)
	}
	if s, _, _ := parseMark("<!-- runnable -->"); !s.exitOK(0) || s.exitOK(4) {
		t.Errorf("a bare runnable takes %v, want 0 alone", s.exits)
	}
	if _, _, err := parseMark("<!-- runnable: exit=0|x -->"); err == nil {
		t.Error("exit=0|x parsed without an error")
	}
	if s, _, _ := parseMark("<!-- runnable: shop -->"); s.shop != defaultShop || s.timeout != 60*time.Second {
		t.Errorf("a bare shop is %q, timeout %v; want %q, 60s", s.shop, s.timeout, defaultShop)
	}
	if _, ok, _ := parseMark("<!-- a comment -->"); ok {
		t.Error("a plain comment reads as a marker")
	}
}

func TestCommands(t *testing.T) {
	got := commands(rewrite("go run ./cmd/mercado serve all \\\n  --mode naive   # a comment\n\n# only a comment\nMERCADO_FAULT='x' go run ./cmd/mercado serve payments\n"))
	want := []string{"mercado serve all   --mode naive   # a comment", "MERCADO_FAULT='x' mercado serve payments"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The course's pages are read too, after the reference pages whose
// commands they share.
func TestDocFilesIncludeTheCourse(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"README.md", "docs/lesson-7.md", "docs/course/index.md", "docs/course/notes.txt"} {
		path := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := docFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := filepath.ToSlash(strings.Join(files, " "))
	if want := "README.md docs/lesson-7.md docs/course/index.md"; got != want {
		t.Errorf("docFiles = %q, want %q", got, want)
	}
}
