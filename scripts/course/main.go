// Command course is the course kit's tool (paper/course/README.md): it
// writes a student copy of the repository for a lab, with the functions the
// lab asks for replaced by stubs, and grades a lab's tests in a copy or in
// the reference. scripts/course.sh runs it.
//
//	course [--repo=DIR] start LAB DIR     write a student copy of lab LAB into DIR
//	course [--repo=DIR] grade [--race=false] [--timeout=D] [--runs=N] LAB [DIR]
//	                                      grade lab LAB in DIR (default: the module around the working directory)
//	course [--repo=DIR] list              the labs, their functions and graded tests
//
// The labs are described in paper/course/labs.json (LabsFile): per lab, the
// functions to stub (package directory plus Name or Type.Name) and the graded
// test groups with their points. A stub keeps the function's signature and
// doc comment and panics with "lab N: implement Name (paper/course/...)"; the
// tests are left as they are. Only the lab's own functions are stubbed, so a
// later lab starts from the reference code of the earlier ones. The stubbing
// works on the syntax tree (go/ast): the production code carries no markers.
//
// A group's points are earned when all of its tests pass, in each of
// --runs runs (3 by default): a group that passes a run and fails a later
// one is reported as flaky and earns nothing. Each test runs in its own
// process, so that a panicking stub in one test does not hide the result of
// the others.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  course.sh start LAB DIR      write a student copy of lab LAB into DIR (new or empty)
  course.sh grade [--race=false] [--timeout=3m] [--runs=3] LAB [DIR]
                               grade lab LAB in DIR (default: the module around the current directory);
                               each group runs up to --runs times, and is flaky if it passes, then fails
  course.sh list               the labs, their functions and graded tests
`

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("course", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, usage) }
	repo := fl.String("repo", "", "the reference repository (default: the module around this directory)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() == 0 {
		fl.Usage()
		return 2
	}
	if *repo == "" {
		r, err := moduleRoot(".")
		if err != nil {
			fmt.Fprintln(stderr, "course:", err)
			return 2
		}
		*repo = r
	}
	course, err := LoadCourse(*repo)
	if err != nil {
		fmt.Fprintln(stderr, "course:", err)
		return 2
	}
	switch cmd, rest := fl.Arg(0), fl.Args()[1:]; cmd {
	case "start":
		return cmdStart(*repo, course, rest, stdout, stderr)
	case "grade":
		return cmdGrade(course, rest, stdout, stderr)
	case "list":
		cmdList(course, stdout)
		return 0
	default:
		fl.Usage()
		return 2
	}
}

func labArg(course *Course, s string) (*Lab, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, fmt.Errorf("LAB must be a number, not %q", s)
	}
	return course.Lab(n)
}

func cmdStart(repo string, course *Course, args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	lab, err := labArg(course, args[0])
	if err != nil {
		fmt.Fprintln(stderr, "course:", err)
		return 2
	}
	dir, err := filepath.Abs(args[1])
	if err != nil {
		fmt.Fprintln(stderr, "course:", err)
		return 2
	}
	if err := StartCopy(repo, dir, lab); err != nil {
		fmt.Fprintln(stderr, "course:", err)
		return 1
	}
	fmt.Fprintf(stdout, "lab %d (%s): student copy in %s\n", lab.Number, lab.Title, dir)
	for _, f := range lab.Functions {
		fmt.Fprintf(stdout, "  to write in %s: %s\n", f.Package, strings.Join(f.Names, ", "))
	}
	fmt.Fprintf(stdout, "handout: %s\ngrade:   cd %s && scripts/course.sh grade %d\n",
		filepath.Join(dir, "paper", "course", lab.Handout), dir, lab.Number)
	return 0
}

func cmdGrade(course *Course, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("grade", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, usage) }
	race := fl.Bool("race", true, "build the tests with the race detector")
	timeout := fl.Duration("timeout", 3*time.Minute, "limit on each test")
	runs := fl.Int("runs", 3, "runs of each group: it earns its points only if it passes them all")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() < 1 || fl.NArg() > 2 || *runs < 1 {
		fl.Usage()
		return 2
	}
	lab, err := labArg(course, fl.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "course:", err)
		return 2
	}
	start := "."
	if fl.NArg() == 2 {
		start = fl.Arg(1)
	}
	dir, err := moduleRoot(start)
	if err != nil {
		fmt.Fprintln(stderr, "course:", err)
		return 2
	}
	if data, err := os.ReadFile(filepath.Join(dir, MarkerFile)); err == nil {
		if n := strings.TrimSpace(string(data)); n != strconv.Itoa(lab.Number) {
			fmt.Fprintf(stderr, "course: note: %s is a student copy of lab %s, graded here for lab %d\n", dir, n, lab.Number)
		}
	}
	warnZooKeeper(lab, stderr)
	results, err := GradeGroups(dir, lab.Groups, GradeOptions{Race: *race, Timeout: *timeout, Runs: *runs})
	if err != nil {
		fmt.Fprintln(stderr, "course:", err)
		return 2
	}
	if Report(stdout, lab, dir, results) < lab.Points() {
		return 1
	}
	return 0
}

func cmdList(course *Course, w io.Writer) {
	for _, l := range course.Labs {
		fmt.Fprintf(w, "lab %d: %s (paper/course/%s), %d points", l.Number, l.Title, l.Handout, l.Points())
		if l.Pending != "" {
			fmt.Fprintf(w, " [not available yet: %s]", l.Pending)
		}
		fmt.Fprintln(w)
		for _, f := range l.Functions {
			fmt.Fprintf(w, "  write   %s: %s\n", f.Package, strings.Join(f.Names, ", "))
		}
		for _, g := range l.Groups {
			fmt.Fprintf(w, "  %3d pts %s (%s): %s\n", g.Points, g.Name, g.Package, strings.Join(g.Tests, ", "))
		}
	}
}

// warnZooKeeper says so when a lab's tests need ZooKeeper and none answers
// where the tests look for it: each test process would then start its own.
func warnZooKeeper(lab *Lab, w io.Writer) {
	need := false
	for _, g := range lab.Groups {
		need = need || g.ZooKeeper
	}
	if !need {
		return
	}
	addr := os.Getenv("KAFKA_TEST_ZK")
	if addr == "" {
		addr = "127.0.0.1:2181"
	}
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
		return
	}
	fmt.Fprintf(w, "course: note: lab %d needs ZooKeeper and nothing answers on %s; each test will try to start its own (slow). Run `make zookeeper` first.\n", lab.Number, addr)
}

// moduleRoot returns the directory holding go.mod at or above dir.
func moduleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
		d = parent
	}
}
