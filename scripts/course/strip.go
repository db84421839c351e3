package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// MarkerFile is written at the root of a student copy; it holds the lab's
// number. The kit's self-test does not run in a student copy.
const MarkerFile = ".course-lab"

// skipTop are top-level directories never copied: build outputs, results and
// data of local runs.
var skipTop = map[string]bool{".git": true, "bin": true, "results": true, "data": true}

// StartCopy writes a student copy of repo for lab into dir: every file of the
// repository (git's tracked and untracked-but-not-ignored files when repo is a
// git checkout) except .git, bin, results and data, with the lab's functions
// stubbed. dir must not exist or be empty.
func StartCopy(repo, dir string, lab *Lab) error {
	if lab.Pending != "" {
		return fmt.Errorf("lab %d is not available yet: %s", lab.Number, lab.Pending)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("%s exists and is not empty", dir)
	}
	if err := CopyRepo(repo, dir); err != nil {
		return err
	}
	if err := StripLab(dir, lab); err != nil {
		return err
	}
	if err := buildPackages(dir, lab.Packages()); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, MarkerFile), []byte(strconv.Itoa(lab.Number)+"\n"), 0o644)
}

// buildPackages compiles the stubbed packages of a student copy: only their
// files changed, and a stub keeps every signature, so if they compile the
// whole copy does.
func buildPackages(dir string, pkgs []string) error {
	args := []string{"build", "-trimpath"}
	for _, p := range pkgs {
		args = append(args, pkgPattern(p))
	}
	cmd := exec.Command(goCommand(GradeOptions{}), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("the stubbed packages do not compile: %v\n%s", err, out)
	}
	return nil
}

// CopyRepo copies the repository's files into dir.
func CopyRepo(repo, dir string) error {
	files, err := repoFiles(repo)
	if err != nil {
		return err
	}
	for _, rel := range files {
		if skipTop[strings.SplitN(rel, "/", 2)[0]] || rel == MarkerFile {
			continue
		}
		if err := copyFile(filepath.Join(repo, rel), filepath.Join(dir, rel)); err != nil {
			return err
		}
	}
	return nil
}

// repoFiles lists the files to copy, slash-separated and relative to repo.
func repoFiles(repo string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(repo, ".git")); err == nil {
		cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
		cmd.Dir = repo
		out, err := cmd.Output()
		if err == nil {
			var files []string
			seen := map[string]bool{}
			for _, f := range strings.Split(string(out), "\x00") {
				if f == "" || seen[f] {
					continue
				}
				seen[f] = true
				// Tracked files deleted in the work tree are listed too.
				if fi, err := os.Lstat(filepath.Join(repo, f)); err == nil && fi.Mode().IsRegular() {
					files = append(files, f)
				}
			}
			sort.Strings(files)
			return files, nil
		}
	}
	var files []string
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repo, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipTop[rel] {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// StripLab replaces the bodies of the lab's functions under root.
func StripLab(root string, lab *Lab) error {
	for _, f := range lab.Functions {
		if err := StripPackage(filepath.Join(root, filepath.FromSlash(f.Package)), f.Names, lab); err != nil {
			return fmt.Errorf("lab %d, package %s: %w", lab.Number, f.Package, err)
		}
	}
	return nil
}

// StubMessage is what the stub of a function panics with.
func StubMessage(lab *Lab, name string) string {
	return fmt.Sprintf("lab %d: implement %s (paper/course/%s)", lab.Number, name, lab.Handout)
}

// ErrMissingFunction means a listed function is not in its package: the list
// in LabsFile is out of date.
var ErrMissingFunction = errors.New("no such function (update " + LabsFile + ")")

// StripPackage replaces, in the non-test Go files of dir, the body of each
// named function or method with a panic naming the lab. Every name must be
// found at least once (a name may be declared in several files with build
// constraints; each is stubbed). Imports left unused are removed.
func StripPackage(dir string, names []string, lab *Lab) error {
	bodies := map[string]string{}
	for _, n := range names {
		bodies[n] = "{\n\tpanic(" + strconv.Quote(StubMessage(lab, n)) + ")\n}"
	}
	files, err := ReplaceBodies(dir, bodies)
	if err != nil {
		return err
	}
	for path, src := range files {
		if err := os.WriteFile(path, src, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ReplaceBodies returns, for each non-test Go file of dir that declares one
// of the functions or methods bodies names, the file's source with those
// bodies replaced by the given text (a block, braces included), imports
// left unused removed, gofmt-ed; it writes nothing. Every name must be found
// at least once, or the error wraps ErrMissingFunction. StripPackage stubs
// with it; the kit's self-test builds trivial implementations with it.
func ReplaceBodies(dir string, bodies map[string]string) (map[string][]byte, error) {
	found := map[string]bool{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		path := filepath.Join(dir, n)
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out, hit, err := replaceSource(path, src, bodies)
		if err != nil {
			return nil, err
		}
		if len(hit) == 0 {
			continue
		}
		for _, h := range hit {
			found[h] = true
		}
		files[path] = out
	}
	var missing []string
	for n := range bodies {
		if !found[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("%s: %w", strings.Join(missing, ", "), ErrMissingFunction)
	}
	return files, nil
}

// funcName is "Name" or "Type.Name" for a declaration.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		}
		break
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

type edit struct {
	start, end int // byte range replaced
	text       string
}

func applyEdits(src []byte, edits []edit) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := bytes.Clone(src)
	for _, e := range edits {
		out = append(out[:e.start:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	return out
}

// stripSource stubs the wanted functions of one file and returns the new,
// gofmt-ed source and the names it stubbed.
func stripSource(path string, src []byte, want map[string]bool, lab *Lab) ([]byte, []string, error) {
	bodies := map[string]string{}
	for n := range want {
		bodies[n] = "{\n\tpanic(" + strconv.Quote(StubMessage(lab, n)) + ")\n}"
	}
	return replaceSource(path, src, bodies)
}

// replaceSource replaces the bodies of one file's functions named in
// bodies and returns the new, gofmt-ed source and the names it replaced.
func replaceSource(path string, src []byte, bodies map[string]string) ([]byte, []string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	var edits []edit
	var hit []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := funcName(fd)
		body, ok := bodies[name]
		if !ok {
			continue
		}
		hit = append(hit, name)
		edits = append(edits, edit{
			start: fset.Position(fd.Body.Lbrace).Offset,
			end:   fset.Position(fd.Body.Rbrace).Offset + 1,
			text:  body,
		})
	}
	if len(edits) == 0 {
		return src, nil, nil
	}
	out, err := dropUnusedImports(path, applyEdits(src, edits))
	if err != nil {
		return nil, nil, err
	}
	out, err = format.Source(out)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: gofmt after replacing bodies: %w", path, err)
	}
	return out, hit, nil
}

var versionElem = regexp.MustCompile(`^v[0-9]+$`)

// importName guesses the name an import path is referred to by: its last
// element, without a major-version element, a ".vN" suffix or a "go-" prefix.
func importName(p string) string {
	elems := strings.Split(p, "/")
	name := elems[len(elems)-1]
	if versionElem.MatchString(name) && len(elems) > 1 {
		name = elems[len(elems)-2]
	}
	if i := strings.Index(name, ".v"); i > 0 {
		name = name[:i]
	}
	name = strings.TrimPrefix(name, "go-")
	return strings.ReplaceAll(name, "-", "_")
}

// dropUnusedImports removes the imports no selector of the file refers to
// any more: stubbing a body may have removed their only use.
func dropUnusedImports(path string, src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("%s: after stubbing: %w", path, err)
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	var edits []edit
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		var drop []*ast.ImportSpec
		for _, s := range gd.Specs {
			is := s.(*ast.ImportSpec)
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return nil, err
			}
			name := importName(p)
			if is.Name != nil {
				name = is.Name.Name
			}
			if name == "_" || name == "." || used[name] || p == "C" {
				continue
			}
			drop = append(drop, is)
		}
		if len(drop) == 0 {
			continue
		}
		if len(drop) == len(gd.Specs) {
			edits = append(edits, edit{start: fset.Position(gd.Pos()).Offset, end: fset.Position(gd.End()).Offset})
			continue
		}
		for _, is := range drop {
			end := is.End()
			if is.Comment != nil {
				end = is.Comment.End()
			}
			edits = append(edits, edit{start: fset.Position(is.Pos()).Offset, end: fset.Position(end).Offset})
		}
	}
	return applyEdits(src, edits), nil
}

// pkgDir turns a package's slash path into a "./pkg" pattern for the go command.
func pkgPattern(pkg string) string { return "./" + path.Clean(pkg) }
