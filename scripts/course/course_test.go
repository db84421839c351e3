package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The kit's self-test: for every lab, the student copy compiles, every one
// of the lab's graded tests fails on it, the reference passes them all, and
// every other lab's graded tests whose package does not depend on the lab's
// packages still pass on the student copy. It runs without the race
// detector: the race-enabled builds of seven copies would double its time,
// and the graded tests run with -race in `make test` anyway.

const repoRoot = "../.."

func loadForTest(t *testing.T) *Course {
	t.Helper()
	if _, err := os.Stat(filepath.Join(repoRoot, MarkerFile)); err == nil {
		t.Skip("this is a student copy (" + MarkerFile + "); the kit tests itself on the reference only")
	}
	c, err := LoadCourse(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLabsMatchTheCode checks, without building anything, that every listed
// function and test exists and every handout is there: it fails loudly when
// a refactoring renames something a lab names.
func TestLabsMatchTheCode(t *testing.T) {
	c := loadForTest(t)
	for _, lab := range c.Labs {
		if _, err := os.Stat(filepath.Join(repoRoot, "paper", "course", lab.Handout)); err != nil {
			t.Errorf("lab %d: handout: %v", lab.Number, err)
		}
		if lab.Pending != "" {
			continue
		}
		for _, f := range lab.Functions {
			decls, err := declaredFuncs(filepath.Join(repoRoot, f.Package), false)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range f.Names {
				if !decls[n] {
					t.Errorf("lab %d: %s has no function %s: update %s (and the handout) to the new name", lab.Number, f.Package, n, LabsFile)
				}
			}
		}
		for _, g := range lab.Groups {
			tests, err := declaredFuncs(filepath.Join(repoRoot, g.Package), true)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range g.Tests {
				if !tests[name] {
					t.Errorf("lab %d group %s: %s has no test %s: update %s", lab.Number, g.Name, g.Package, name, LabsFile)
				}
			}
		}
	}
}

// declaredFuncs lists the functions with a body declared in dir's non-test
// files (tests false) or test files (tests true), as Name or Type.Name.
func declaredFuncs(dir string, tests bool) (map[string]bool, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") != tests {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				out[funcName(fd)] = true
			}
		}
	}
	return out, nil
}

func TestStripSource(t *testing.T) {
	src := `package p

import (
	"fmt"
	"strings"
	zz "sort"
)

// T is a type.
type T struct{}

// M is stubbed.
func (t *T) M(x int) (n int, err error) {
	// a comment that goes away
	return fmt.Sscan(strings.TrimSpace("1"), &n)
}

// F is stubbed.
func F() { zz.Strings(nil) }

// G is kept.
func G() string { return fmt.Sprint(1) }
`
	lab := &Lab{Number: 7, Handout: "lab7.md"}
	out, hit, err := stripSource("p.go", []byte(src), map[string]bool{"T.M": true, "F": true}, lab)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(hit, ","); got != "T.M,F" {
		t.Errorf("stubbed %s, want T.M,F", got)
	}
	want := `package p

import (
	"fmt"
)

// T is a type.
type T struct{}

// M is stubbed.
func (t *T) M(x int) (n int, err error) {
	panic("lab 7: implement T.M (paper/course/lab7.md)")
}

// F is stubbed.
func F() {
	panic("lab 7: implement F (paper/course/lab7.md)")
}

// G is kept.
func G() string { return fmt.Sprint(1) }
`
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestImportName(t *testing.T) {
	for p, want := range map[string]string{
		"fmt": "fmt", "golang.org/x/sys/unix": "unix", "github.com/go-zookeeper/zk": "zk",
		"github.com/schollz/progressbar/v3": "progressbar", "gopkg.in/yaml.v3": "yaml",
	} {
		if got := importName(p); got != want {
			t.Errorf("importName(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestParseTestOutput(t *testing.T) {
	for _, c := range []struct {
		out  string
		err  error
		want Outcome
	}{
		{"=== RUN   TestX\n--- PASS: TestX (0.00s)\nPASS\n", nil, Pass},
		{"=== RUN   TestX\n    x_test.go:9: bad\n--- FAIL: TestX (0.00s)\nFAIL\n", errors.New("exit status 1"), Fail},
		{"=== RUN   TestX\n--- SKIP: TestX (0.00s)\n    x_test.go:3: no server\nPASS\n", nil, Skip},
		{"testing: warning: no tests to run\nPASS\n", nil, NotFound},
		{"=== RUN   TestX\npanic: lab 1: implement F\n", errors.New("exit status 2"), Fail},
		{"=== RUN   TestX\n--- PASS: TestX (0.00s)\nPASS\n", errors.New("exit status 1"), Fail},
	} {
		got, msg := parseTestOutput("TestX", c.out, c.err)
		if got != c.want {
			t.Errorf("%q: %v (%s), want %v", c.out, got, msg, c.want)
		}
	}
	_, msg := parseTestOutput("TestX", "=== RUN   TestX\n    x_test.go:9: want 3, got 4\n--- FAIL: TestX (0.00s)\nFAIL\n", errors.New("exit status 1"))
	if msg != "x_test.go:9: want 3, got 4" {
		t.Errorf("message %q", msg)
	}
}

// testDeps returns, for each graded package, the module's packages its test
// binary is built from (slash paths relative to the module root).
func testDeps(t *testing.T, goCmd string, c *Course) map[string]map[string]bool {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	modPath := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(mod), "\n", 2)[0], "module"))
	out := map[string]map[string]bool{}
	for _, lab := range c.Labs {
		for _, g := range lab.Groups {
			if out[g.Package] != nil {
				continue
			}
			cmd := exec.Command(goCmd, "list", "-deps", "-test", "-f", "{{.ImportPath}}", pkgPattern(g.Package))
			cmd.Dir = repoRoot
			b, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list %s: %v", g.Package, err)
			}
			deps := map[string]bool{}
			for _, line := range strings.Split(string(b), "\n") {
				line, _, _ = strings.Cut(line, " ") // "p [p.test]"
				if rel, ok := strings.CutPrefix(line, modPath+"/"); ok {
					deps[rel] = true
				}
			}
			out[g.Package] = deps
		}
	}
	return out
}

func describe(results []GroupResult) string {
	var b bytes.Buffer
	for _, gr := range results {
		for _, tr := range gr.Tests {
			fmt.Fprintf(&b, "  %s %s/%s: %s %s\n", gr.Group.Package, gr.Group.Name, tr.Name, tr.Outcome,
				strings.ReplaceAll(firstLines(tr.Message, 4), "\n", "\n      "))
		}
	}
	return b.String()
}

// sameFile reports whether two files hold the same bytes.
func sameFile(a, b string) bool {
	x, err1 := os.ReadFile(a)
	y, err2 := os.ReadFile(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// TestKit is the self-test of the course kit (see the top of this file).
//
// Timing: the graded tests of the reference run once; on a student copy the
// lab's own tests run with a short timeout (they fail at the first stub, or,
// like TestKilledConsumerAtLeastOnce, wait for a condition that never comes).
// An independent group whose test binary, built with -trimpath, is
// byte-identical to the reference's is the same program on the same files:
// it is run again only when the reference ran it in under a second, and
// otherwise takes the reference's result (logged).
func TestKit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a student copy of every lab and runs the graded tests; TestLabsMatchTheCode covers -short")
	}
	c := loadForTest(t)
	goCmd := goCommand(GradeOptions{})
	deps := testDeps(t, goCmd, c)
	opt := GradeOptions{Timeout: 3 * time.Minute, Go: goCmd, Scratch: t.TempDir()}
	const strippedTimeout = 10 * time.Second

	ref, err := NewGrader(repoRoot, opt)
	if err != nil {
		t.Fatal(err)
	}
	refTime := map[string]time.Duration{} // "lab/group" -> elapsed on the reference
	for _, lab := range c.Labs {
		if lab.Pending != "" {
			t.Logf("lab %d left out: %s", lab.Number, lab.Pending)
			continue
		}
		for _, gr := range ref.Grade(lab.Groups, 0) {
			if !gr.Passed() {
				t.Errorf("lab %d: the reference fails group %s:\n%s", lab.Number, gr.Group.Name, describe([]GroupResult{gr}))
			}
			var d time.Duration
			for _, tr := range gr.Tests {
				d += tr.Elapsed
			}
			refTime[fmt.Sprintf("%d/%s", lab.Number, gr.Group.Name)] = d
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	for _, lab := range c.Labs {
		if lab.Pending != "" {
			continue
		}
		t.Run(fmt.Sprintf("lab%d", lab.Number), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := StartCopy(repoRoot, dir, &lab); err != nil {
				t.Fatal(err)
			}
			g, err := NewGrader(dir, GradeOptions{Timeout: opt.Timeout, Go: goCmd, Scratch: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}

			// Every graded test fails on the copy.
			for _, gr := range g.Grade(lab.Groups, strippedTimeout) {
				for _, tr := range gr.Tests {
					if tr.Outcome != Fail {
						t.Errorf("lab %d group %s: %s is %s on the student copy, want FAIL (a graded test must need the lab's functions)\n%s",
							lab.Number, gr.Group.Name, tr.Name, tr.Outcome, tr.Message)
					}
				}
			}

			// The other labs' tests that do not depend on this lab's
			// packages still pass on the copy.
			mine := map[string]bool{}
			for _, p := range lab.Packages() {
				mine[p] = true
			}
			var ran, same []string
			for _, o := range c.Labs {
				if o.Number == lab.Number || o.Pending != "" {
					continue
				}
			groups:
				for _, grp := range o.Groups {
					for d := range deps[grp.Package] {
						if mine[d] {
							continue groups
						}
					}
					key := fmt.Sprintf("%d/%s", o.Number, grp.Name)
					bin, msg := g.Binary(grp.Package)
					if bin == "" {
						t.Errorf("lab %d's student copy: %s does not build:\n%s", lab.Number, grp.Package, msg)
						continue
					}
					if refBin, _ := ref.Binary(grp.Package); sameFile(bin, refBin) && refTime[key] >= time.Second {
						same = append(same, key)
						continue
					}
					ran = append(ran, key)
					for _, gr := range g.Grade([]Group{grp}, 0) {
						if !gr.Passed() {
							t.Errorf("lab %d's student copy breaks group %s (%s), which does not depend on the lab:\n%s",
								lab.Number, key, grp.Package, describe([]GroupResult{gr}))
						}
					}
				}
			}
			if len(ran) == 0 {
				t.Errorf("lab %d: no other lab's tests ran on its student copy", lab.Number)
			}
			t.Logf("independent groups passed on the copy: %s; same test binary as the reference's (passed there): %s",
				strings.Join(ran, " "), strings.Join(same, " "))
		})
	}
}

func TestStripPackageMissingFunction(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nfunc F() int { return 1 }\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	lab := &Lab{Number: 1, Handout: "lab1.md"}
	err := StripPackage(dir, []string{"F", "T.Gone"}, lab)
	if !errors.Is(err, ErrMissingFunction) || !strings.Contains(err.Error(), "T.Gone") {
		t.Fatalf("err = %v, want ErrMissingFunction naming T.Gone", err)
	}
}

func TestStartRefusesPendingLabAndNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := StartCopy(repoRoot, dir, &Lab{Number: 9, Pending: "needs broker/x"}); err == nil || !strings.Contains(err.Error(), "needs broker/x") {
		t.Errorf("pending lab: err = %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := StartCopy(repoRoot, dir, &Lab{Number: 9}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("non-empty dir: err = %v", err)
	}
}
