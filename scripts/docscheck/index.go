package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Decl is one declared name of the module.
type Decl struct {
	Dir  string // package directory, slash-separated, relative to the root
	File string // file, relative to the root
	// Params is the number of parameters of a function or method, -1 for
	// any other declaration; Variadic says its last one is ...T.
	Params   int
	Variadic bool
}

// Index holds the module's declarations, parsed with go/ast.
type Index struct {
	Root string
	Fset *token.FileSet
	// Names maps "Name" (top-level) and "Type.Member" (method, struct
	// field, interface method) to where they are declared.
	Names map[string][]Decl
	// Types is the set of declared type names.
	Types map[string]bool
	// Packages maps a package name (not main) to its directories.
	Packages map[string][]string
	// Imports is the set of names under which the module's files import
	// packages from outside the module (io, gzip, unix...).
	Imports map[string]bool
	// Files maps a file (relative, slash-separated) to its syntax tree.
	Files map[string]*ast.File
	// TopLevel is the set of entries at the root that the repository
	// tracks (not those its .gitignore names with a leading slash).
	TopLevel map[string]bool
}

// skipDir reports whether a directory is outside the indexed source.
func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || name == "node_modules" ||
		(strings.HasPrefix(name, ".") && name != ".")
}

// NewIndex parses every Go file under root (the module's root).
func NewIndex(root string) (*Index, error) {
	modPath, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	ix := &Index{
		Root:     root,
		Fset:     token.NewFileSet(),
		Names:    map[string][]Decl{},
		Types:    map[string]bool{},
		Packages: map[string][]string{},
		Imports:  map[string]bool{},
		Files:    map[string]*ast.File{},
		TopLevel: map[string]bool{},
	}
	if err := ix.readTopLevel(); err != nil {
		return nil, err
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(mustRel(root, path))
		if d.IsDir() {
			if rel != "." && (skipDir(d.Name()) || (!strings.Contains(rel, "/") && !ix.TopLevel[rel])) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(ix.Fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("docscheck: %w", err)
		}
		ix.Files[rel] = f
		ix.add(rel, f, modPath)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, dirs := range ix.Packages {
		sort.Strings(dirs)
	}
	return ix, nil
}

// readTopLevel lists the root's entries, less those .gitignore excludes as
// /name/ (build output such as bin/ and results/).
func (ix *Index) readTopLevel() error {
	entries, err := os.ReadDir(ix.Root)
	if err != nil {
		return err
	}
	ignored := map[string]bool{".git": true}
	if b, err := os.ReadFile(filepath.Join(ix.Root, ".gitignore")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "/") && !strings.ContainsAny(line, "*?[") {
				ignored[strings.Trim(line, "/")] = true
			}
		}
	}
	for _, e := range entries {
		if !ignored[e.Name()] {
			ix.TopLevel[e.Name()] = true
		}
	}
	return nil
}

func modulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(rest), nil
		}
	}
	return "", fmt.Errorf("docscheck: no module line in %s/go.mod", root)
}

func mustRel(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return rel
}

func (ix *Index) add(file string, f *ast.File, modPath string) {
	dir := pathDir(file)
	if name := f.Name.Name; name != "main" && !strings.HasSuffix(name, "_test") {
		if !contains(ix.Packages[name], dir) {
			ix.Packages[name] = append(ix.Packages[name], dir)
		}
	}
	for _, imp := range f.Imports {
		p := strings.Trim(imp.Path.Value, `"`)
		if p == modPath || strings.HasPrefix(p, modPath+"/") {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		ix.Imports[name] = true
	}
	put := func(name string, params int, variadic bool) {
		ix.Names[name] = append(ix.Names[name], Decl{Dir: dir, File: file, Params: params, Variadic: variadic})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			n, variadic := countParams(d.Type)
			if recv := receiverType(d); recv != "" {
				put(recv+"."+d.Name.Name, n, variadic)
			} else {
				put(d.Name.Name, n, variadic)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					ix.Types[s.Name.Name] = true
					put(s.Name.Name, -1, false)
					ix.addMembers(s.Name.Name, s.Type, put)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						put(n.Name, -1, false)
					}
				}
			}
		}
	}
}

// addMembers records a struct type's fields and an interface's methods.
func (ix *Index) addMembers(typ string, expr ast.Expr, put func(string, int, bool)) {
	switch t := expr.(type) {
	case *ast.StructType:
		for _, fld := range t.Fields.List {
			for _, n := range fld.Names {
				put(typ+"."+n.Name, -1, false)
			}
			if len(fld.Names) == 0 { // embedded: its name is its type's
				if name := typeName(fld.Type); name != "" {
					put(typ+"."+name, -1, false)
				}
			}
		}
	case *ast.InterfaceType:
		for _, m := range t.Methods.List {
			if ft, ok := m.Type.(*ast.FuncType); ok {
				n, variadic := countParams(ft)
				for _, name := range m.Names {
					put(typ+"."+name.Name, n, variadic)
				}
			}
		}
	}
}

// receiverType is a method's receiver type name without * and type
// parameters, or "" for a function.
func receiverType(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	return typeName(d.Recv.List[0].Type)
}

func typeName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			return t.Sel.Name
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func countParams(ft *ast.FuncType) (n int, variadic bool) {
	for _, p := range ft.Params.List {
		k := len(p.Names)
		if k == 0 {
			k = 1
		}
		n += k
		if _, ok := p.Type.(*ast.Ellipsis); ok {
			variadic = true
		}
	}
	return n, variadic
}

// Lookup returns the declarations of name ("Name" or "Type.Member").
func (ix *Index) Lookup(name string) []Decl { return ix.Names[name] }

// InPackage returns the declarations of name in the packages called pkg.
func (ix *Index) InPackage(pkg, name string) []Decl {
	var out []Decl
	for _, d := range ix.Names[name] {
		for _, dir := range ix.Packages[pkg] {
			if d.Dir == dir {
				out = append(out, d)
			}
		}
	}
	return out
}

func pathDir(file string) string {
	if i := strings.LastIndex(file, "/"); i >= 0 {
		return file[:i]
	}
	return "."
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
