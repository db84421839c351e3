package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGradeRunsEachGroupAndReportsFlaky grades a small module of three
// groups three runs each: a steady one (earns its points in 3 runs), a
// failing one (one run, no points) and a flaky one, whose test passes its
// first run and fails its second (no points, reported as FLAKY). Before
// issue 24 every group ran once, so the flaky one earned its points.
func TestGradeRunsEachGroupAndReportsFlaky(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/flaky\n\ngo 1.22\n")
	write("p.go", "package p\n\n// Answer is 42.\nfunc Answer() int { return 42 }\n")
	// The flaky test leaves a mark in the package directory (the test
	// process's working directory) and fails when it finds it.
	write("p_test.go", `package p

import (
	"os"
	"testing"
)

func TestSteady(t *testing.T) {
	if Answer() != 42 {
		t.Fatal("no")
	}
}

func TestWrong(t *testing.T) { t.Fatal("always wrong") }

func TestSecondRunFails(t *testing.T) {
	if _, err := os.Stat("ran-once"); err == nil {
		t.Fatal("this run differs from the first")
	}
	if err := os.WriteFile("ran-once", nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
`)
	groups := []Group{
		{Name: "steady", Package: ".", Points: 50, Tests: []string{"TestSteady"}},
		{Name: "wrong", Package: ".", Points: 20, Tests: []string{"TestSteady", "TestWrong"}},
		{Name: "flaky", Package: ".", Points: 30, Tests: []string{"TestSteady", "TestSecondRunFails"}},
	}
	results, err := GradeGroups(dir, groups, GradeOptions{Go: goCommand(GradeOptions{}), Runs: 3, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		runs, passed, earned int
		flaky                bool
	}{{3, 3, 50, false}, {1, 0, 0, false}, {2, 1, 0, true}}
	for i, w := range want {
		r := results[i]
		if r.Runs != w.runs || r.PassedRuns != w.passed || r.Earned != w.earned || r.Flaky() != w.flaky {
			t.Errorf("group %s: %d runs, %d passed, %d points, flaky %v; want %d, %d, %d, %v\n%s", r.Group.Name,
				r.Runs, r.PassedRuns, r.Earned, r.Flaky(), w.runs, w.passed, w.earned, w.flaky, describe([]GroupResult{r}))
		}
	}
	var out bytes.Buffer
	lab := &Lab{Number: 9, Title: "flaky", Handout: "lab9.md", Groups: groups}
	if total := Report(&out, lab, dir, results); total != 50 {
		t.Errorf("total %d, want 50", total)
	}
	for _, s := range []string{"steady", "3 runs", "FLAKY: passed 1 of 2 runs", "this run differs from the first", "flaky: flaky ("} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the report lacks %q:\n%s", s, out.String())
		}
	}
	t.Logf("\n%s", out.String())
}
