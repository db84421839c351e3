package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// LabsFile is where the labs are described, relative to the repository root.
const LabsFile = "paper/course/labs.json"

// Course is the content of LabsFile.
type Course struct {
	Labs []Lab `json:"labs"`
}

// Lab is one lab: the functions a student writes and the tests that grade
// them.
type Lab struct {
	// Number is the lab's number (1, 2, ...), as the commands take it.
	Number int `json:"lab"`
	// Title names the lab.
	Title string `json:"title"`
	// Handout is the handout's file name in paper/course/.
	Handout string `json:"handout"`
	// Pending, when set, says why the lab cannot be handed out yet (the
	// code it builds on is not in the repository); start refuses it and the
	// self-test leaves it out.
	Pending string `json:"pending,omitempty"`
	// Functions are the functions whose bodies the student copy replaces
	// with stubs, by package.
	Functions []Functions `json:"functions"`
	// Groups are the graded test groups.
	Groups []Group `json:"groups"`
}

// Functions names functions of one package: "Name" for a function,
// "Type.Name" for a method (pointer or value receiver).
type Functions struct {
	// Package is the package's directory relative to the repository root.
	Package string   `json:"package"`
	Names   []string `json:"names"`
}

// Group is a set of tests of one package, graded together: its points are
// earned when every one of its tests passes.
type Group struct {
	Name    string   `json:"name"`
	Package string   `json:"package"`
	Points  int      `json:"points"`
	Tests   []string `json:"tests"`
	// ZooKeeper says the tests need a real ZooKeeper (KAFKA_TEST_ZK).
	ZooKeeper bool `json:"zookeeper,omitempty"`
}

// Points is the lab's total.
func (l *Lab) Points() int {
	n := 0
	for _, g := range l.Groups {
		n += g.Points
	}
	return n
}

// Packages are the packages whose functions the lab strips.
func (l *Lab) Packages() []string {
	var out []string
	for _, f := range l.Functions {
		out = append(out, f.Package)
	}
	return out
}

var (
	identRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	funcNameRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*\.)?[A-Za-z_][A-Za-z0-9_]*$`)
	testNameRE = regexp.MustCompile(`^Test[A-Za-z0-9_]*$`)
)

// LoadCourse reads and checks LabsFile under repo.
func LoadCourse(repo string) (*Course, error) {
	path := filepath.Join(repo, LabsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Course
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

func (c *Course) validate() error {
	if len(c.Labs) == 0 {
		return fmt.Errorf("no labs")
	}
	seen := map[int]bool{}
	for _, l := range c.Labs {
		if l.Number < 1 || seen[l.Number] {
			return fmt.Errorf("lab number %d: not positive or repeated", l.Number)
		}
		seen[l.Number] = true
		if l.Title == "" || l.Handout == "" {
			return fmt.Errorf("lab %d: title and handout are required", l.Number)
		}
		if len(l.Functions) == 0 || len(l.Groups) == 0 {
			return fmt.Errorf("lab %d: needs functions and groups", l.Number)
		}
		for _, f := range l.Functions {
			if f.Package == "" || len(f.Names) == 0 {
				return fmt.Errorf("lab %d: a functions entry needs a package and names", l.Number)
			}
			for _, n := range f.Names {
				if !funcNameRE.MatchString(n) {
					return fmt.Errorf("lab %d: %q is not Name or Type.Name", l.Number, n)
				}
			}
		}
		groups := map[string]bool{}
		for _, g := range l.Groups {
			if !identRE.MatchString(g.Name) || groups[g.Name] {
				return fmt.Errorf("lab %d: group name %q: not an identifier or repeated", l.Number, g.Name)
			}
			groups[g.Name] = true
			if g.Package == "" || g.Points <= 0 || len(g.Tests) == 0 {
				return fmt.Errorf("lab %d group %s: needs a package, points and tests", l.Number, g.Name)
			}
			for _, t := range g.Tests {
				if !testNameRE.MatchString(t) {
					return fmt.Errorf("lab %d group %s: %q is not a test name", l.Number, g.Name, t)
				}
			}
		}
	}
	return nil
}

// Lab returns lab n.
func (c *Course) Lab(n int) (*Lab, error) {
	for i := range c.Labs {
		if c.Labs[i].Number == n {
			return &c.Labs[i], nil
		}
	}
	var nums []string
	for _, l := range c.Labs {
		nums = append(nums, fmt.Sprint(l.Number))
	}
	return nil, fmt.Errorf("no lab %d (labs: %s)", n, strings.Join(nums, ", "))
}
