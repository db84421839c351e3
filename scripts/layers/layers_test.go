package main

import (
	"slices"
	"testing"
)

// TestModuleKeepsItsLayers is the layering check of `make test`: every
// rule in rules.go holds on the module, and every package a rule names
// exists. Before issue 25 it failed with:
//
//	the clients never import ...: consumer/group (test files) -> broker/log
//	the clients never import ...: consumer/ui (test files) -> broker/log
//	the producer never imports the consumer: producer/cmd/kafka-mirror -> consumer/group
func TestModuleKeepsItsLayers(t *testing.T) {
	g, err := load("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.pkgs) < 10 {
		t.Fatalf("go list gave %d packages of %s", len(g.pkgs), g.module)
	}
	for _, u := range unmatched(g, rules) {
		t.Errorf("rules.go: %s: update the rule to the package's new path", u)
	}
	for _, v := range check(g, rules) {
		t.Errorf("%v", v)
	}
}

// TestCheckReportsChains checks the walk on a made-up graph.
func TestCheckReportsChains(t *testing.T) {
	g := &graph{module: "m", pkgs: map[string]*pkg{}}
	add := func(path string, imports, tests []string) {
		g.pkgs[path] = &pkg{path: path, imports: imports, tests: tests}
	}
	add("client", []string{"util"}, []string{"broker", "helper"})
	add("client/cmd", []string{"client"}, nil)
	add("client/other", []string{"wire"}, []string{"broker/log"})
	add("util", []string{"wire", "broker/log"}, nil)
	add("helper", []string{"broker/server"}, nil)
	add("broker", []string{"broker/log", "broker/server"}, nil)
	add("broker/log", []string{"wire"}, nil)
	add("broker/server", []string{"broker/log"}, nil)
	add("wire", nil, nil)
	add("exp", []string{"client"}, nil)
	add("exp/sub", []string{"exp"}, nil)

	harnesses = []string{"broker"}
	defer func(h []string) { harnesses = h }(harnesses)
	rs := []rule{
		{What: "clients", From: []string{"client/..."}, To: []string{"broker/log", "broker/server"}, Tests: true},
		{What: "exp", From: []string{"..."}, Except: []string{"exp/..."}, To: []string{"exp/..."}},
	}
	var got []string
	for _, v := range check(g, rs) {
		got = append(got, v.String())
	}
	want := []string{
		// Through a package the rule does not bind, by a shortest chain.
		"clients: client -> util -> broker/log",
		// A test file's import, walked on; the harness broker is not.
		// (client/cmd is not reported: the chain starts in client.)
		"clients: client (test files) -> helper -> broker/server",
		"clients: client/other (test files) -> broker/log",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}

	if u := unmatched(g, []rule{{What: "r", From: []string{"gone/..."}, To: []string{"wire"}}}); len(u) != 1 {
		t.Errorf("unmatched: got %q, want one line for gone/...", u)
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"...", "a/b", true},
		{"a/...", "a", true},
		{"a/...", "a/b/c", true},
		{"a/...", "ab", false},
		{"a", "a/b", false},
		{"a/b", "a/b", true},
	} {
		if got := match(c.pattern, c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}
