package docscheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Ledger is the document whose first section lists the marked deviations.
const Ledger = "paper/deviations.md"

const marker = "Deviation:"

// Deviation is one `Deviation:` comment in the code.
type Deviation struct {
	File string
	Line int
	// Names are the names the comment is on: the enclosing or following
	// declaration ("Type.Method", "Type.Field", "Name"), "package" for a
	// package comment; none in a script.
	Names []string
}

// Row is one row of the ledger's section of marked deviations.
type Row struct {
	Line  int
	Files []string
	Names []string // backticked names of the Go name column, "package" if it says so
}

// Deviations finds every `Deviation:` comment in the module's Go files
// (tests excluded: their notes point at the deviation of the code they
// test) and in its shell scripts.
func (ix *Index) Deviations() ([]Deviation, error) {
	var out []Deviation
	for file, f := range ix.Files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				for i := 0; ; {
					k := strings.Index(c.Text[i:], marker)
					if k < 0 {
						break
					}
					pos := c.Pos() + token.Pos(i+k)
					if i+k > 0 && strings.ContainsRune("`\"'", rune(c.Text[i+k-1])) {
						i += k + len(marker) // quoted: about the marker
						continue
					}
					out = append(out, Deviation{
						File:  file,
						Line:  ix.Fset.Position(pos).Line,
						Names: declNames(f, pos),
					})
					i += k + len(marker)
				}
			}
		}
	}
	err := filepath.WalkDir(ix.Root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(mustRel(ix.Root, path))
		if d.IsDir() {
			if rel != "." && (skipDir(d.Name()) || (!strings.Contains(rel, "/") && !ix.TopLevel[rel])) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".sh") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if c := strings.Index(line, "#"); c >= 0 && strings.Contains(line[c:], marker) {
				out = append(out, Deviation{File: rel, Line: i + 1})
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, err
}

// declNames names the declaration a comment at pos belongs to: the one
// around it (its doc comment included); "package" for a comment above the
// package clause, "file" for one that stands apart from any declaration.
func declNames(f *ast.File, pos token.Pos) []string {
	if pos < f.Package {
		return []string{"package"}
	}
	for _, d := range f.Decls {
		start := d.Pos()
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
		case *ast.GenDecl:
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
		}
		if pos >= d.End() {
			continue
		}
		// d is the first declaration that ends after pos: around or next.
		if pos < start {
			return []string{"file"} // a comment of its own, on the file
		}
		switch d := d.(type) {
		case *ast.FuncDecl:
			if recv := receiverType(d); recv != "" {
				return []string{recv + "." + d.Name.Name}
			}
			return []string{d.Name.Name}
		case *ast.GenDecl:
			return specNames(d, pos, pos >= start)
		}
	}
	return nil
}

// specNames names the spec of a declaration block that holds pos (or the
// next one), down to a struct field.
func specNames(d *ast.GenDecl, pos token.Pos, inside bool) []string {
	for _, s := range d.Specs {
		if pos >= s.End() && inside {
			continue
		}
		switch s := s.(type) {
		case *ast.TypeSpec:
			if st, ok := s.Type.(*ast.StructType); ok && pos > s.Name.Pos() {
				for _, fld := range st.Fields.List {
					end := fld.End()
					if fld.Comment != nil {
						end = fld.Comment.End()
					}
					if pos < end && len(fld.Names) > 0 {
						return []string{s.Name.Name + "." + fld.Names[0].Name}
					}
				}
			}
			return []string{s.Name.Name}
		case *ast.ValueSpec:
			var out []string
			for _, n := range s.Names {
				out = append(out, n.Name)
			}
			return out
		}
	}
	return nil
}

var (
	rowCodeRE = regexp.MustCompile("`([^`]+)`")
	section2  = regexp.MustCompile(`^##\s`)
)

// LedgerRows reads the rows of the ledger's section of marked deviations:
// the level-2 heading that mentions `Deviation:`, to the next one.
func LedgerRows(content string) ([]Row, error) {
	var rows []Row
	in, found := false, false
	for i, line := range strings.Split(content, "\n") {
		if section2.MatchString(line) {
			in = strings.Contains(line, "`"+marker+"`")
			found = found || in
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		pieces, _ := scanLine(line)
		var cells [][]string
		var cellText []string
		last := 0
		for _, p := range pieces {
			if p.sep {
				if p.pos > 0 {
					cellText = append(cellText, line[last:p.pos])
				}
				last = p.pos + 1
				cells = append(cells, nil)
				continue
			}
			if len(cells) > 0 {
				cells[len(cells)-1] = append(cells[len(cells)-1], strings.TrimSpace(p.text))
			}
		}
		if len(cells) < 3 || len(cellText) < 3 {
			continue // a separator row: no code in it
		}
		var r Row
		r.Line = i + 1
		for _, s := range cells[0] {
			if strings.Contains(s, "/") {
				r.Files = append(r.Files, s)
			}
		}
		if len(r.Files) == 0 {
			continue // the header row
		}
		for _, s := range cells[1] {
			if m := goRefRE.FindStringSubmatch(s); m != nil {
				r.Names = append(r.Names, m[1])
			}
		}
		if strings.Contains(cellText[1], "package") {
			r.Names = append(r.Names, "package")
		}
		rows = append(rows, r)
	}
	if !found {
		return nil, fmt.Errorf("%s: no level-2 heading mentions `%s`", Ledger, marker)
	}
	return rows, nil
}

// on reports whether a comment on these names can be the row's: a name in
// common, a type and one of its members, or a comment on the package or
// the file as a whole.
func (r Row) on(names []string) bool {
	for _, n := range names {
		for _, rn := range r.Names {
			if n == rn || n == "package" || n == "file" ||
				strings.HasPrefix(n, rn+".") || strings.HasPrefix(rn, n+".") {
				return true
			}
		}
	}
	return false
}

// CheckLedger pairs comments with rows: each comment needs a row that
// lists its file and the name it is on (any row of its file for a script),
// and each row a comment of its own in one of its files. A row may list
// several files and take a comment from each.
//
// Rows are matched first, one comment each (Kuhn's augmenting paths, so
// that as many rows as possible have one); the comments left take the
// rows' other files.
func CheckLedger(devs []Deviation, rows []Row) []Problem {
	fits := func(d Deviation, r Row) bool {
		if !contains(r.Files, d.File) {
			return false
		}
		return strings.HasSuffix(d.File, ".sh") || r.on(d.Names)
	}
	devOf := make([]int, len(rows)) // the comment each row has first
	rowOf := make([]int, len(devs))
	for i := range devOf {
		devOf[i] = -1
	}
	for i := range rowOf {
		rowOf[i] = -1
	}
	var try func(r int, seen []bool) bool
	try = func(r int, seen []bool) bool {
		for d := range devs {
			if seen[d] || !fits(devs[d], rows[r]) {
				continue
			}
			seen[d] = true
			if rowOf[d] < 0 || try(rowOf[d], seen) {
				rowOf[d], devOf[r] = r, d
				return true
			}
		}
		return false
	}
	for r := range rows {
		try(r, make([]bool, len(devs)))
	}
	used := map[string]bool{} // row and file taken
	key := func(r int, file string) string { return fmt.Sprint(r, " ", file) }
	for r, d := range devOf {
		if d >= 0 {
			used[key(r, devs[d].File)] = true
		}
	}
	var out []Problem
	for d, r := range rowOf {
		if r >= 0 {
			continue
		}
		for r2, row := range rows {
			if fits(devs[d], row) && !used[key(r2, devs[d].File)] {
				used[key(r2, devs[d].File)], r = true, r2
				break
			}
		}
		if r < 0 {
			on := "the file"
			if len(devs[d].Names) > 0 {
				on = "`" + strings.Join(devs[d].Names, "`, `") + "`"
			}
			out = append(out, Problem{Doc: devs[d].File, Line: devs[d].Line,
				Msg: fmt.Sprintf("`%s` on %s has no row in %s naming this file and name", marker, on, Ledger)})
		}
	}
	for r, d := range devOf {
		if d < 0 {
			out = append(out, Problem{Doc: Ledger, Line: rows[r].Line,
				Msg: fmt.Sprintf("row for `%s` (`%s`): no `%s` comment on these names in its files",
					strings.Join(rows[r].Files, "`, `"), strings.Join(rows[r].Names, "`, `"), marker)})
		}
	}
	return out
}
