package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// foreign lists names in backticks that look like the module's (a module
// type or package before the dot) but are another system's, each with why
// it is quoted.
var foreign = map[string]string{
	"String.hashCode": "Java's, which 0.7's partitioner uses",
	"Int.MinValue":    "Scala's, in 0.7's partitioner",
	"Type.Name":       "the course's placeholder for a method",
	// compress/flate's unexported names, in the profile of the code before
	// the repository's own inflater.
	"huffmanDecoder.init": "compress/flate's",
}

// place is what a path in backticks names: a file or a package directory.
type place struct {
	path  string // relative, slash-separated
	isDir bool
}

// goFile reports whether names can be looked up in the place.
func (p *place) goFile() bool {
	return p != nil && (p.isDir || strings.HasSuffix(p.path, ".go"))
}

func (p *place) has(d Decl) bool {
	if p.isDir {
		return d.Dir == p.path
	}
	if strings.HasSuffix(p.path, "_test.go") {
		return d.File == p.path || d.Dir == pathDir(p.path)
	}
	return d.File == p.path
}

var (
	testNameRE = regexp.MustCompile(`(?:^|[^\w])((?:Test|Benchmark|Fuzz)[A-Z0-9_]\w*)(\.\.\.)?`)
	goRefRE    = regexp.MustCompile(`^\*?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*){0,2})(\((.*)\))?$`)
	linkRE     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	schemeRE   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	upperRE    = regexp.MustCompile(`^[A-Z][A-Z_]+$`)
	pathRE     = regexp.MustCompile(`^[A-Za-z0-9_.\-/*<>]+$`)
	fileNameRE = regexp.MustCompile(`^[\w.\-]+\.(go|sh|md|py|java|scala|json|jsonl|png|svg|csv|yaml|txt|pprof|cfg|properties|mod)$`)
	// gapRE is what may stand between a path and the names declared
	// there: commas, "and", "or", once parentheticals are dropped.
	gapRE   = regexp.MustCompile(`^[\s,]*(?:(?:and|or)\s)?[\s,]*$`)
	parenRE = regexp.MustCompile(`\([^()]*\)`)
)

// adjacent reports whether the text between two code spans keeps the
// first one's place for the second: `dir/file.go` `A`, `B` (note), and `C`.
func adjacent(gap string) bool {
	for {
		g := parenRE.ReplaceAllString(gap, "")
		if g == gap {
			break
		}
		gap = g
	}
	return gapRE.MatchString(gap)
}

func fenceLen(s string) int {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	return n
}

// CheckDoc checks one Markdown document (doc is its path relative to the
// root) against the index.
func (ix *Index) CheckDoc(doc, content string) []Problem {
	var out []Problem
	lines := strings.Split(content, "\n")
	inFence := fenced(lines)
	for i, line := range lines {
		if inFence[i] {
			continue
		}
		report := func(format string, args ...any) {
			out = append(out, Problem{Doc: doc, Line: i + 1, Msg: fmt.Sprintf(format, args...)})
		}
		pieces, rest := scanLine(line)
		var ctx *place
		end := 0 // where the last code span ended
		for _, p := range pieces {
			if p.sep {
				ctx = nil
				continue
			}
			if !adjacent(line[end:p.pos]) {
				ctx = nil
			}
			ctx = ix.checkSpan(strings.TrimSpace(p.text), ctx, report)
			end = p.pos + len(p.text) + 2*fenceLen(line[p.pos:])
		}
		ix.checkNameFileCells(pieces, report)
		for _, m := range linkRE.FindAllStringSubmatch(rest, -1) {
			ix.checkLink(doc, content, m[1], report)
		}
	}
	return out
}

// checkSpan checks one code span and returns the place later names on the
// same line (until a table border) are taken to be in.
func (ix *Index) checkSpan(s string, ctx *place, report func(string, ...any)) *place {
	if s == "" {
		return ctx
	}
	if strings.HasPrefix(s, "/work/") {
		report("`%s` is outside the repository", s)
		return ctx
	}
	if fileNameRE.MatchString(s) {
		// `broker/log/log.go` `Log.Append`, `read.go` `Log.Read`: a file
		// of the same package; otherwise (server.properties) prose.
		if ctx != nil && strings.HasSuffix(s, ".go") {
			dir := ctx.path
			if !ctx.isDir {
				dir = pathDir(dir)
			}
			if p, ok := ix.repoPath(dir + "/" + s); ok {
				if p == nil {
					report("no file `%s` in `%s`", s, dir)
				}
				return p
			}
		}
		return nil
	}
	tokens := strings.Fields(s)
	if p, ok := ix.repoPath(tokens[0]); ok {
		if p == nil {
			report("no file or directory `%s`", tokens[0])
			return nil
		}
		for _, t := range tokens[1:] {
			ix.checkTests(t, p, report)
		}
		return p
	}
	// A go command names its package with ./dir.
	spanCtx := ctx
	if tokens[0] == "go" {
		for _, t := range tokens {
			if strings.HasPrefix(t, "./") && !strings.Contains(t, "...") {
				if p, ok := ix.repoPath(strings.TrimSuffix(t[2:], "/")); ok && p != nil {
					spanCtx = p
				}
			}
		}
	}
	if ix.checkTests(s, spanCtx, report) {
		return ctx
	}
	if m := goRefRE.FindStringSubmatch(s); m != nil {
		var args *string
		if m[2] != "" {
			args = &m[3]
		}
		ix.checkName(m[1], args, ctx, report)
	}
	return ctx
}

// checkTests checks every test, benchmark and fuzz name in s; it reports
// whether s is one such name and nothing else.
func (ix *Index) checkTests(s string, ctx *place, report func(string, ...any)) bool {
	ms := testNameRE.FindAllStringSubmatchIndex(s, -1)
	for _, m := range ms {
		name, prefix := s[m[2]:m[3]], m[4] >= 0
		if _, ok := foreign[name]; ok {
			continue
		}
		decls := ix.tests(name, prefix)
		switch {
		case len(decls) == 0:
			report("no test, benchmark or fuzz target `%s`", name)
		case ctx.goFile() && !anyIn(decls, ctx):
			report("`%s` is not in `%s` (it is in %s)", name, ctx.path, dirsOf(decls))
		}
	}
	if len(ms) != 1 {
		return false
	}
	whole := strings.TrimSuffix(strings.SplitN(s, "/", 2)[0], "...")
	return s[ms[0][2]:ms[0][3]] == whole
}

func (ix *Index) tests(name string, prefix bool) []Decl {
	if !prefix {
		return ix.Names[name]
	}
	var out []Decl
	for n, ds := range ix.Names {
		if strings.HasPrefix(n, name) && !strings.Contains(n, ".") {
			out = append(out, ds...)
		}
	}
	return out
}

// checkName checks a Go name in backticks: "Name", "X.Name" or
// "pkg.Type.Member", with its call's arguments when written.
func (ix *Index) checkName(name string, args *string, ctx *place, report func(string, ...any)) {
	if _, ok := foreign[name]; ok {
		return
	}
	parts := strings.Split(name, ".")
	var decls []Decl
	checked := false // the name is one of the module's by its form
	switch len(parts) {
	case 1:
		// A single name is taken for the module's only right after a Go
		// file or package, and only written as Go names are (Name,
		// camelCase): `consumer` or `register` may be prose.
		decls = ix.Names[name]
		if ctx.goFile() { // or a method or field of a type there
			for key, ds := range ix.Names {
				if strings.HasSuffix(key, "."+name) {
					decls = append(decls, inPlace(ds, ctx)...)
				}
			}
		}
		checked = ctx.goFile() && hasUpper(name) && (len(decls) > 0 || args == nil)
	case 2:
		a, b := parts[0], parts[1]
		if ix.Types[a] {
			decls = append(decls, ix.Names[name]...)
			checked = true
		}
		if _, ok := ix.Packages[a]; ok && (looksExported(b) || hasUpper(b)) {
			decls = append(decls, ix.InPackage(a, b)...)
			checked = true
			if !ix.Types[a] {
				ctx = nil // the package is named: `replica.AssignReplicas`
			}
		}
		if !checked && !ix.Imports[a] && hasUpper(a) && looksGo(a) {
			report("`%s`: no type or package `%s` in the module", name, a)
			return
		}
	case 3:
		if _, ok := ix.Packages[parts[0]]; ok && looksExported(parts[1]) {
			decls = ix.InPackage(parts[0], parts[1]+"."+parts[2])
			checked = true
		}
	}
	if !checked || (len(decls) == 0 && strings.ToLower(name) == name) {
		return // all lower case and unknown: a key such as broker.list
	}
	if len(decls) == 0 {
		if ctx.goFile() {
			report("`%s` is not declared in `%s`", name, ctx.path)
		} else {
			report("`%s` is not declared in the module", name)
		}
		return
	}
	if ctx.goFile() && len(parts) < 3 {
		if !anyIn(decls, ctx) {
			report("`%s` is not in `%s` (it is in %s)", name, ctx.path, filesOf(nearest(decls, ctx)))
			return
		}
		decls = inPlace(decls, ctx)
	}
	if args != nil {
		ix.checkArgs(name, *args, decls, report)
	}
}

// checkArgs checks that a call written with its arguments has as many as
// one of the declarations has parameters.
func (ix *Index) checkArgs(name, args string, decls []Decl, report func(string, ...any)) {
	e, err := parser.ParseExpr("f(" + args + ")")
	if err != nil {
		return // pseudo-code such as NewResult(...)
	}
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return
	}
	n := len(call.Args)
	var have []string
	for _, d := range decls {
		if d.Params < 0 {
			return // a field of function type, a type conversion: not checked
		}
		if d.Params == n || (d.Variadic && n >= d.Params-1) {
			return
		}
		have = append(have, fmt.Sprint(d.Params))
	}
	report("`%s(%s)` gives %d arguments; the declaration has %s parameters (%s)",
		name, args, n, strings.Join(have, " or "), filesOf(decls))
}

// repoPath recognises a repository path: its first element is a top-level
// entry and it has a slash. It returns nil, true when it does not exist.
// Upper-case elements (DIR, SYSTEM), * and <...> are placeholders.
func (ix *Index) repoPath(tok string) (*place, bool) {
	tok = strings.TrimPrefix(strings.TrimRight(tok, ",.:;)"), "./")
	if !pathRE.MatchString(tok) {
		return nil, false
	}
	if !strings.Contains(tok, "/") { // `consumer`: a top-level package
		if st, err := os.Stat(filepath.Join(ix.Root, tok)); err == nil && st.IsDir() && ix.TopLevel[tok] {
			return &place{path: tok, isDir: true}, true
		}
		return nil, false
	}
	elems := strings.Split(strings.TrimSuffix(tok, "/"), "/")
	if !ix.TopLevel[elems[0]] {
		return nil, false
	}
	glob := false
	for i, e := range elems {
		if upperRE.MatchString(e) || strings.ContainsAny(e, "*<>") || e == "..." {
			elems[i], glob = "*", true
		}
	}
	rel := strings.Join(elems, "/")
	full := filepath.Join(ix.Root, filepath.FromSlash(rel))
	if glob {
		ms, _ := filepath.Glob(full)
		if len(ms) == 0 {
			return nil, true
		}
		return &place{path: rel, isDir: true}, true
	}
	st, err := os.Stat(full)
	if err != nil {
		return nil, true
	}
	return &place{path: rel, isDir: st.IsDir()}, true
}

// checkLink checks a relative link: its file exists inside the repository
// and its anchor is one of the target's headings.
func (ix *Index) checkLink(doc, content, target string, report func(string, ...any)) {
	if schemeRE.MatchString(target) || strings.HasPrefix(target, "//") {
		return
	}
	path, anchor, _ := strings.Cut(target, "#")
	if path == "" {
		if !anchors(content)[anchor] {
			report("link `%s`: no heading with anchor #%s in this document", target, anchor)
		}
		return
	}
	file := doc
	{
		file = filepath.ToSlash(filepath.Join(pathDir(doc), path))
		if strings.HasPrefix(path, "/") || file == ".." || strings.HasPrefix(file, "../") {
			report("link `%s` leaves the repository", target)
			return
		}
	}
	full := filepath.Join(ix.Root, filepath.FromSlash(file))
	st, err := os.Stat(full)
	if err != nil {
		report("link `%s`: no file `%s`", target, file)
		return
	}
	if anchor == "" || st.IsDir() || !strings.HasSuffix(file, ".md") {
		return
	}
	b, err := os.ReadFile(full)
	if err != nil {
		report("link `%s`: %v", target, err)
		return
	}
	if !anchors(string(b))[anchor] {
		report("link `%s`: no heading with anchor #%s in `%s`", target, anchor, file)
	}
}

func anyIn(ds []Decl, p *place) bool { return len(inPlace(ds, p)) > 0 }

func inPlace(ds []Decl, p *place) []Decl {
	var out []Decl
	for _, d := range ds {
		if p.has(d) {
			out = append(out, d)
		}
	}
	return out
}

func filesOf(ds []Decl) string { return listOf(ds, func(d Decl) string { return d.File }) }
func dirsOf(ds []Decl) string  { return listOf(ds, func(d Decl) string { return d.Dir }) }

func listOf(ds []Decl, f func(Decl) string) string {
	set := map[string]bool{}
	for _, d := range ds {
		set["`"+f(d)+"`"] = true
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func looksExported(s string) bool { return s != "" && s[0] >= 'A' && s[0] <= 'Z' }

func hasUpper(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' })
}

// looksGo reports whether a qualifier is written as a Go type or package
// might be: camelCase or lower case, no underscores.
func looksGo(s string) bool { return !strings.Contains(s, "_") }

// checkNameFileCells checks the handouts' tables, whose rows give a name
// and then, in the next cell, its file: | `Log.Append(set)` | `log.go` |.
func (ix *Index) checkNameFileCells(pieces []piece, report func(string, ...any)) {
	var cells [][]string
	cur := []string{}
	for _, p := range pieces {
		if p.sep {
			cells = append(cells, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, strings.TrimSpace(p.text))
	}
	for i := 0; i+1 < len(cells); i++ {
		if len(cells[i]) != 1 || len(cells[i+1]) != 1 {
			continue
		}
		m := goRefRE.FindStringSubmatch(cells[i][0])
		file := cells[i+1][0]
		if m == nil || !strings.HasSuffix(file, ".go") || strings.Contains(file, "/") {
			continue
		}
		decls := ix.Names[m[1]]
		if len(decls) == 0 {
			continue
		}
		found := false
		for _, d := range decls {
			if strings.HasSuffix(d.File, "/"+file) {
				found = true
			}
		}
		if !found {
			report("`%s` is not in a file `%s` (it is in %s)", m[1], file, filesOf(decls))
		}
	}
}

// nearest keeps the declarations in the place's package when there are
// any there: Checksum is in crc.go, whatever else has the name.
func nearest(ds []Decl, p *place) []Decl {
	dir := p.path
	if !p.isDir {
		dir = pathDir(dir)
	}
	var out []Decl
	for _, d := range ds {
		if d.Dir == dir {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return ds
	}
	return out
}
