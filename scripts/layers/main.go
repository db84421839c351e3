// Command layers checks the module's layering rules (rules.go: which
// packages may not import which) on the import graph `go list -deps -json`
// gives, and prints every offending import chain, A -> B -> C. It exits 1
// when a rule is broken. Its test runs the same check in `make test`.
//
//	go run ./scripts/layers
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

func main() {
	g, err := load(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(2)
	}
	vs := check(g, rules)
	for _, v := range vs {
		fmt.Println(v)
	}
	if len(vs) > 0 {
		os.Exit(1)
	}
	fmt.Printf("layers: %d rules hold over %d packages\n", len(rules), len(g.pkgs))
}

// pkg is one package of the module as the graph holds it; every path is
// relative to the module ("broker/log").
type pkg struct {
	path    string
	imports []string // the module's packages its non-test files import
	tests   []string // those its test files import (in-package and _test), minus itself
}

// graph is the module's import graph.
type graph struct {
	module string          // the module path
	pkgs   map[string]*pkg // by path relative to the module
}

// listed is the part of `go list -json`'s Package the check reads.
type listed struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Module       *struct {
		Path string
		Main bool
	}
}

// load runs `go list -deps -json ./...` in dir and keeps the main module's
// packages and the imports between them.
func load(dir string) (*graph, error) {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,TestImports,XTestImports,Module", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var all []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		all = append(all, p)
	}
	g := &graph{pkgs: map[string]*pkg{}}
	for _, p := range all {
		if p.Module != nil && p.Module.Main {
			g.module = p.Module.Path
		}
	}
	if g.module == "" {
		return nil, errors.New("go list named no package of the main module")
	}
	rel := func(path string) (string, bool) {
		if path == g.module {
			return ".", true
		}
		r, ok := strings.CutPrefix(path, g.module+"/")
		return r, ok
	}
	for _, p := range all {
		path, ok := rel(p.ImportPath)
		if !ok || p.Module == nil || !p.Module.Main {
			continue
		}
		n := &pkg{path: path}
		for _, imp := range p.Imports {
			if r, ok := rel(imp); ok {
				n.imports = append(n.imports, r)
			}
		}
		for _, imp := range append(append([]string(nil), p.TestImports...), p.XTestImports...) {
			if r, ok := rel(imp); ok && r != path {
				n.tests = append(n.tests, r)
			}
		}
		g.pkgs[path] = n
	}
	return g, nil
}
