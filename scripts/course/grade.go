package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
)

// GradeOptions say how to run the tests.
type GradeOptions struct {
	// Race builds the tests with the race detector.
	Race bool
	// Timeout bounds each test.
	Timeout time.Duration
	// Go is the go command (default: "go" from PATH, else GOROOT's).
	Go string
	// Scratch is a directory for test binaries (default: a temporary one).
	Scratch string
	// Runs is how many times each group runs (0: once). A group earns its
	// points only if it passes every run; one that passes a run and fails a
	// later one is flaky (GroupResult.Flaky).
	Runs int
	// Overlay, when set, is a `go build -overlay` file: the tests are built
	// with some source files replaced (the kit's self-test uses it to
	// build trivial implementations without copying the repository).
	Overlay string
}

// Outcome is the result of one test.
type Outcome int

// The outcomes of a test.
const (
	Pass Outcome = iota
	Fail
	Skip
	NotFound // the test binary has no such test
	BuildFailed
)

func (o Outcome) String() string {
	return [...]string{"PASS", "FAIL", "SKIP", "MISSING", "BUILD FAILED"}[o]
}

// TestResult is one test's outcome, with the lines that explain a failure.
type TestResult struct {
	Name    string
	Outcome Outcome
	Message string // why it failed or skipped; empty on a pass
	Elapsed time.Duration
}

// GroupResult is a graded group's result.
type GroupResult struct {
	Group Group
	// Tests are the results of the first failing run, or of the last run
	// when every run passed.
	Tests  []TestResult
	Earned int
	// Runs is how many runs were made: GradeOptions.Runs, or fewer when a
	// run failed (a failing run ends the group's runs).
	Runs int
	// PassedRuns is how many of them passed.
	PassedRuns int
}

// Flaky reports whether the group passed a run and then failed one: its
// tests, or the code they test, do not give the same answer every time.
func (g *GroupResult) Flaky() bool { return g.PassedRuns > 0 && g.PassedRuns < g.Runs }

// Passed reports whether every test passed.
func (g *GroupResult) Passed() bool {
	for _, t := range g.Tests {
		if t.Outcome != Pass {
			return false
		}
	}
	return true
}

func goCommand(opt GradeOptions) string {
	if opt.Go != "" {
		return opt.Go
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// builder compiles each package's test binary once.
type builder struct {
	dir     string // the module root
	opt     GradeOptions
	scratch string
	mu      sync.Mutex        // guards bins and errs
	bins    map[string]string // package -> binary
	errs    map[string]string // package -> build output
}

func newBuilder(dir string, opt GradeOptions) (*builder, func(), error) {
	scratch, cleanup := opt.Scratch, func() {}
	if scratch == "" {
		d, err := os.MkdirTemp("", "course-grade-")
		if err != nil {
			return nil, nil, err
		}
		scratch, cleanup = d, func() { os.RemoveAll(d) }
	}
	return &builder{dir: dir, opt: opt, scratch: scratch, bins: map[string]string{}, errs: map[string]string{}}, cleanup, nil
}

// binary returns the test binary of pkg, or the build's output.
func (b *builder) binary(pkg string) (string, string) {
	if bin, ok := b.bins[pkg]; ok {
		return bin, ""
	}
	if msg, ok := b.errs[pkg]; ok {
		return "", msg
	}
	bin := filepath.Join(b.scratch, strings.ReplaceAll(pkg, "/", "_")+".test")
	// -trimpath: the same package in two copies of the repository is the
	// same build, so copies share GOCACHE.
	args := []string{"test", "-c", "-trimpath", "-o", bin}
	if b.opt.Race {
		args = append(args, "-race")
	}
	if b.opt.Overlay != "" {
		args = append(args, "-overlay", b.opt.Overlay)
	}
	args = append(args, pkgPattern(pkg))
	cmd := exec.Command(goCommand(b.opt), args...)
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err == nil {
		if _, serr := os.Stat(bin); serr != nil {
			err = fmt.Errorf("no test binary (no test files?)")
		}
	}
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		b.errs[pkg] = msg
		return "", msg
	}
	b.bins[pkg] = bin
	return bin, ""
}

// runTest runs one test in its own process, so that a panicking stub in
// one test does not take the others with it.
func (g *Grader) runTest(pkg, test string, timeout time.Duration) TestResult {
	bin, msg := g.Binary(pkg)
	if bin == "" {
		return TestResult{Name: test, Outcome: BuildFailed, Message: firstLines(msg, 15)}
	}
	if timeout <= 0 {
		timeout = g.b.opt.Timeout
	}
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^"+test+"$", "-test.v", "-test.count=1",
		"-test.timeout", timeout.String())
	cmd.Dir = filepath.Join(g.b.dir, filepath.FromSlash(pkg))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := TestResult{Name: test, Elapsed: time.Since(start)}
	r.Outcome, r.Message = parseTestOutput(test, out.String(), err)
	return r
}

var (
	resultLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`)
	noise      = regexp.MustCompile(`^(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP)|PASS$|FAIL$|ok\s|FAIL\s|exit status|testing: warning)`)
)

// parseTestOutput reads `-test.v` output of a run of one test.
func parseTestOutput(test, out string, runErr error) (Outcome, string) {
	outcome, seen := Fail, false
	for _, line := range strings.Split(out, "\n") {
		if m := resultLine.FindStringSubmatch(line); m != nil && m[2] == test {
			seen = true
			switch m[1] {
			case "PASS":
				outcome = Pass
			case "SKIP":
				outcome = Skip
			default:
				outcome = Fail
			}
		}
	}
	switch {
	case !seen && strings.Contains(out, "testing: warning: no tests to run"):
		return NotFound, "no test named " + test + " in the package"
	case seen && outcome == Pass && runErr == nil:
		return Pass, ""
	case seen && outcome == Pass:
		// Passed, but the process failed afterwards (a leaked goroutine
		// panicked, a race was reported, ...).
		outcome = Fail
	}
	return outcome, explain(out, runErr)
}

// explain keeps the informative lines of a failed or skipped run.
func explain(out string, runErr error) string {
	var keep []string
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "panic: ") {
			// The panic, and the first frame outside the runtime and testing.
			keep = append(keep, line)
			for j := i + 1; j < len(lines) && j < i+60; j++ {
				if at := userFrame(lines[j]); at != "" {
					keep = append(keep, "    at "+at)
					break
				}
			}
			break
		}
		if strings.TrimSpace(line) == "" || noise.MatchString(strings.TrimSpace(line)) {
			continue
		}
		keep = append(keep, strings.TrimRight(line, " \t"))
	}
	msg := firstLines(strings.Join(keep, "\n"), 12)
	if msg == "" && runErr != nil {
		var ee *exec.ExitError
		if errors.As(runErr, &ee) {
			msg = "the test process " + ee.ProcessState.String()
		} else {
			msg = runErr.Error()
		}
	}
	return msg
}

// userFrame returns the file:line of a stack trace line that is in the
// module's code rather than the standard library, or "".
func userFrame(line string) string {
	l := strings.TrimSpace(line)
	if i := strings.Index(l, " +0x"); i > 0 {
		l = l[:i]
	}
	if !strings.Contains(l, ".go:") || strings.ContainsAny(l, "() ") {
		return ""
	}
	if root := runtime.GOROOT(); root != "" && strings.HasPrefix(l, root) {
		return ""
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(l, "/"), "/")
	if strings.HasPrefix(l, "/") || strings.Contains(first, ".") {
		return l
	}
	return ""
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d more lines)", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}

// Grader grades tests in one module directory, building each package's
// test binary once.
type Grader struct {
	b       *builder
	cleanup func()
}

// NewGrader returns a Grader for the module at dir. Close removes its
// test binaries.
func NewGrader(dir string, opt GradeOptions) (*Grader, error) {
	b, cleanup, err := newBuilder(dir, opt)
	if err != nil {
		return nil, err
	}
	return &Grader{b: b, cleanup: cleanup}, nil
}

// Close removes the grader's test binaries.
func (g *Grader) Close() { g.cleanup() }

// Binary builds (once) and returns the test binary of pkg, or "" and the
// build's output.
func (g *Grader) Binary(pkg string) (string, string) {
	g.b.mu.Lock()
	defer g.b.mu.Unlock()
	return g.b.binary(pkg)
}

// Grade runs the groups' tests, each limited to timeout (0: the options'),
// each group GradeOptions.Runs times in a row: until a run fails (its
// failures are then reported) or every run has passed (the points are then
// earned). A group that fails its first run is not run again, so a failing
// lab costs one run; one that fails after passing is Flaky.
func (g *Grader) Grade(groups []Group, timeout time.Duration) []GroupResult {
	runs := max(g.b.opt.Runs, 1)
	var out []GroupResult
	for _, gr := range groups {
		res := GroupResult{Group: gr}
		for res.Runs < runs {
			var tests []TestResult
			passed := true
			for _, t := range gr.Tests {
				r := g.runTest(gr.Package, t, timeout)
				passed = passed && r.Outcome == Pass
				tests = append(tests, r)
			}
			res.Runs++
			res.Tests = tests
			if !passed {
				break
			}
			res.PassedRuns++
		}
		if res.PassedRuns == res.Runs {
			res.Earned = gr.Points
		}
		out = append(out, res)
	}
	return out
}

// GradeGroups runs the groups' tests in the module at dir.
func GradeGroups(dir string, groups []Group, opt GradeOptions) ([]GroupResult, error) {
	g, err := NewGrader(dir, opt)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	return g.Grade(groups, 0), nil
}

// Report prints a lab's scores and returns the total earned.
func Report(w io.Writer, lab *Lab, dir string, results []GroupResult) int {
	fmt.Fprintf(w, "lab %d: %s (paper/course/%s), in %s\n", lab.Number, lab.Title, lab.Handout, dir)
	total := 0
	var flaky []string
	for _, gr := range results {
		total += gr.Earned
		passed := 0
		for _, t := range gr.Tests {
			if t.Outcome == Pass {
				passed++
			}
		}
		runs := ""
		switch {
		case gr.Flaky():
			flaky = append(flaky, gr.Group.Name)
			runs = fmt.Sprintf(" in run %d; FLAKY: passed %d of %d runs, then failed", gr.Runs, gr.PassedRuns, gr.Runs)
		case gr.Runs > 1:
			runs = fmt.Sprintf(", %d runs", gr.Runs)
		}
		fmt.Fprintf(w, "  %-14s %3d/%-3d  %d of %d tests pass%s  (%s)\n", gr.Group.Name, gr.Earned, gr.Group.Points,
			passed, len(gr.Tests), runs, gr.Group.Package)
		for _, t := range gr.Tests {
			if t.Outcome == Pass {
				continue
			}
			fmt.Fprintf(w, "      %s %s\n", t.Outcome, t.Name)
			for _, l := range strings.Split(t.Message, "\n") {
				if l != "" {
					fmt.Fprintf(w, "          %s\n", l)
				}
			}
			if t.Outcome == Skip && gr.Group.ZooKeeper {
				fmt.Fprintf(w, "          (these tests need ZooKeeper: run `make zookeeper` and export KAFKA_TEST_ZK=127.0.0.1:2181)\n")
			}
		}
	}
	fmt.Fprintf(w, "  %-14s %3d/%-3d\n", "total", total, lab.Points())
	if len(flaky) > 0 {
		fmt.Fprintf(w, "flaky: %s (passed a run, then failed one: no points; look for a race, a timing assumption or shared state)\n",
			strings.Join(flaky, ", "))
	}
	return total
}
