package docs_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The marker convention. The line right before a ```sh fence says what the
// block is; a block of commands without one fails TestEveryShellBlockIsMarked.
//
//	<!-- runnable -->                  a script: runs, must exit 0
//	<!-- runnable: OPTION ... -->      the same, with options (below)
//	<!-- not runnable: REASON -->      CI cannot run it, and says why
//
// Options, separated by spaces; a value with spaces goes in backquotes:
//
//	exit=N           the block's exit status (default 0); exit=0|4 takes
//	                 either: a load lab ends 4, INVALID, when the machine
//	                 was too busy to measure, and says so
//	expect=`RE`      its output (stdout and stderr) matches the regular
//	                 expression RE, in multi-line mode (^ and $ match at
//	                 each line); repeatable
//	shop             runs against `mercado serve all`, started (and stopped
//	                 cleanly) around it
//	shop=NAME        runs against the first line of the server block NAME;
//	                 consecutive blocks naming the same shop share it, as
//	                 a reader's terminals would
//	after=DURATION   starts this long after the block before, as a reader
//	                 waits before the next command
//	timeout=DURATION the time limit (default 60s)
//	server           each line is a long-running server: it is started on
//	                 its own, must become ready (every admin /readyz of the
//	                 services it serves answers 200), and must stop cleanly
//	                 (exit 0) on SIGTERM
//	together         (with server) the lines run side by side, one terminal
//	                 each, and are ready together
//	name=NAME        (with server) the name a later shop=NAME uses
const (
	markRunnable    = "runnable"
	markNotRunnable = "not runnable"
)

// shellLangs are the fence languages of a block of commands.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// A block is one fenced code block of a Markdown file.
type block struct {
	file string // relative to the repository root
	line int    // of the opening fence, 1-based
	lang string
	text string // the block's lines, the fence's indentation removed
	mark string // the line before the fence, trimmed
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// readBlocks returns every fenced block of the Markdown file path (rel is
// its name relative to the repository root).
func readBlocks(path, rel string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []block
		cur    *block
		indent string
		body   []string
		prev   string
		n      int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
			cur = &block{file: rel, line: n, lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), mark: strings.TrimSpace(prev)}
			body = nil
		case cur != nil && trimmed == "```":
			cur.text = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			body = append(body, strings.TrimPrefix(line, indent))
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: the fence opened here is never closed", cur)
	}
	return blocks, nil
}

// docFiles are README.md, docs/*.md and the course's pages,
// docs/course/*.md, relative to the repository root. The course comes last,
// so that a command it shares with a reference page runs once and is
// checked against both pages' expectations.
func docFiles(root string) ([]string, error) {
	files := []string{filepath.Join(root, "README.md")}
	for _, pattern := range []string{"docs/*.md", "docs/course/*.md"} {
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		if err != nil {
			return nil, err
		}
		files = append(files, matches...)
	}
	var err error
	for i, f := range files {
		if files[i], err = filepath.Rel(root, f); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// looksLikeCommands reports whether an unlabelled block starts with a
// command: such a block must be fenced as sh, so that it is marked too.
var looksLikeCommands = regexp.MustCompile(`^([A-Z_]+=\S+ )*(go|curl|mercado|docker|kubectl|scripts/\S+)( |$)`)

// spec is what a block's marker says.
type spec struct {
	runnable bool
	reason   string // not runnable: why

	exits    []int // the statuses it may end with; none: 0
	expect   []*regexp.Regexp
	shop     string // "" none; defaultShop for `mercado serve all`; else a server block's name
	after    time.Duration
	timeout  time.Duration
	server   bool
	together bool
	name     string
}

const defaultShop = "mercado serve all"

// parseMark reads a marker line. ok is false when the line is no marker.
func parseMark(mark string) (s spec, ok bool, err error) {
	inner, found := strings.CutPrefix(mark, "<!--")
	if !found {
		return spec{}, false, nil
	}
	inner, found = strings.CutSuffix(inner, "-->")
	if !found {
		return spec{}, false, nil
	}
	inner = strings.TrimSpace(inner)
	if reason, found := strings.CutPrefix(inner, markNotRunnable+":"); found {
		if strings.TrimSpace(reason) == "" {
			return spec{}, true, fmt.Errorf("a block that is not runnable says why: <!-- not runnable: REASON -->")
		}
		return spec{reason: strings.TrimSpace(reason)}, true, nil
	}
	if inner == markNotRunnable {
		return spec{}, true, fmt.Errorf("a block that is not runnable says why: <!-- not runnable: REASON -->")
	}
	opts, found := strings.CutPrefix(inner, markRunnable)
	if !found || (opts != "" && opts[0] != ':') {
		return spec{}, false, nil
	}
	s = spec{runnable: true, timeout: 60 * time.Second}
	pairs, err := splitOptions(strings.TrimPrefix(opts, ":"))
	if err != nil {
		return spec{}, true, err
	}
	for _, p := range pairs {
		if err := s.set(p[0], p[1]); err != nil {
			return spec{}, true, fmt.Errorf("option %s: %w", p[0], err)
		}
	}
	switch {
	case s.server && s.shop != "":
		return spec{}, true, fmt.Errorf("a server block runs no shop of its own (drop shop)")
	case !s.server && (s.together || s.name != ""):
		return spec{}, true, fmt.Errorf("together and name go with server")
	case s.server && (len(s.exits) > 0 || len(s.expect) > 0):
		return spec{}, true, fmt.Errorf("a server must stop with exit 0, and its output is logs (drop exit and expect)")
	}
	return s, true, nil
}

// exitOK reports whether status is one the block may end with.
func (s spec) exitOK(status int) bool {
	if len(s.exits) == 0 {
		return status == 0
	}
	return slices.Contains(s.exits, status)
}

// wantExit says the statuses the block may end with: "0", "0 or 4".
func (s spec) wantExit() string {
	if len(s.exits) == 0 {
		return "0"
	}
	var w []string
	for _, n := range s.exits {
		w = append(w, strconv.Itoa(n))
	}
	return strings.Join(w, " or ")
}

func (s *spec) set(key, value string) error {
	var err error
	flag := func(v *bool) error {
		if value != "" {
			return fmt.Errorf("takes no value")
		}
		*v = true
		return nil
	}
	switch key {
	case "exit":
		for v := range strings.SplitSeq(value, "|") {
			var n int
			if n, err = strconv.Atoi(v); err != nil {
				break
			}
			s.exits = append(s.exits, n)
		}
	case "expect":
		var re *regexp.Regexp
		re, err = regexp.Compile("(?m)" + value)
		s.expect = append(s.expect, re)
	case "shop":
		s.shop = value
		if value == "" {
			s.shop = defaultShop
		}
	case "after":
		s.after, err = time.ParseDuration(value)
	case "timeout":
		s.timeout, err = time.ParseDuration(value)
	case "server":
		err = flag(&s.server)
	case "together":
		err = flag(&s.together)
	case "name":
		s.name = value
		if value == "" {
			err = fmt.Errorf("needs a value")
		}
	default:
		err = fmt.Errorf("unknown (exit, expect, shop, after, timeout, server, together, name)")
	}
	return err
}

// splitOptions splits options into key and value pairs: "shop exit=28"
// gives (shop, ""), (exit, 28); a value in backquotes may hold spaces.
func splitOptions(s string) ([][2]string, error) {
	var pairs [][2]string
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return pairs, nil
		}
		end := strings.IndexAny(s, " =")
		if end < 0 {
			return append(pairs, [2]string{s, ""}), nil
		}
		key := s[:end]
		if s[end] == ' ' {
			pairs, s = append(pairs, [2]string{key, ""}), s[end:]
			continue
		}
		s = s[end+1:]
		var value string
		if strings.HasPrefix(s, "`") {
			closing := strings.IndexByte(s[1:], '`')
			if closing < 0 {
				return nil, fmt.Errorf("option %s: the value's backquote is never closed", key)
			}
			value, s = s[1:closing+1], s[closing+2:]
		} else {
			end := strings.IndexByte(s, ' ')
			if end < 0 {
				end = len(s)
			}
			value, s = s[:end], s[end:]
		}
		pairs = append(pairs, [2]string{key, value})
	}
}

// A runnable block: a block and what its marker says.
type runnable struct {
	block
	spec
}

// rewrite turns a documented command into the one the test runs: the
// binary built once instead of compiling it again for every command.
func rewrite(text string) string {
	return strings.ReplaceAll(text, "go run ./cmd/mercado", "mercado")
}

// commands splits a block into its commands: one per line, a line ending
// in a backslash continued on the next; comments and blank lines dropped.
func commands(text string) []string {
	var cmds []string
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`))
			continue
		}
		cur.WriteString(line)
		cmd := strings.TrimSpace(cur.String())
		cur.Reset()
		if cmd != "" && !strings.HasPrefix(cmd, "#") {
			cmds = append(cmds, cmd)
		}
	}
	return cmds
}
