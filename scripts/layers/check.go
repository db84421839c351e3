package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// match reports whether path matches pattern (see rule).
func match(pattern, path string) bool {
	if pattern == "..." {
		return true
	}
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == tree || strings.HasPrefix(path, tree+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, path) })
}

// binds reports whether r binds the package at path.
func (r *rule) binds(path string) bool {
	return matchAny(r.From, path) && !matchAny(r.Except, path)
}

// violation is one import chain that breaks a rule: chain[0] imports
// chain[1], which imports chain[2], and so on to the forbidden package.
type violation struct {
	rule  *rule
	tests bool // chain[0]'s test files import chain[1]
	chain []string
}

func (v violation) String() string {
	from := v.chain[0]
	if v.tests {
		from += " (test files)"
	}
	return fmt.Sprintf("%s: %s", v.rule.What, strings.Join(append([]string{from}, v.chain[1:]...), " -> "))
}

// check returns every violation of rules in g, one per package bound by a
// rule and forbidden package it reaches (by a shortest chain), sorted.
// A chain is reported only from where it starts: the walk does not go on
// through a package the same rule binds, which is checked on its own.
func check(g *graph, rules []rule) []violation {
	var out []violation
	paths := make([]string, 0, len(g.pkgs))
	for p := range g.pkgs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for i := range rules {
		r := &rules[i]
		for _, p := range paths {
			if !r.binds(p) {
				continue
			}
			seen := map[string]bool{}
			for _, chain := range walk(g, r, p, g.pkgs[p].imports, false) {
				seen[chain[len(chain)-1]] = true
				out = append(out, violation{rule: r, chain: chain})
			}
			if !r.Tests {
				continue
			}
			for _, chain := range walk(g, r, p, g.pkgs[p].tests, true) {
				if !seen[chain[len(chain)-1]] {
					out = append(out, violation{rule: r, tests: true, chain: chain})
				}
			}
		}
	}
	return out
}

// walk goes breadth first from the package from through first (what it
// imports) and on through the non-test imports of what they import, and
// returns a shortest chain to each package r forbids that it reaches. It
// stops at forbidden packages, at packages r binds, and, when tests, at
// harnesses.
func walk(g *graph, r *rule, from string, first []string, tests bool) [][]string {
	parent := map[string]string{from: ""}
	var queue, found []string
	visit := func(p, via string) {
		if _, ok := parent[p]; ok {
			return
		}
		parent[p] = via
		switch {
		case matchAny(r.To, p):
			found = append(found, p)
		case r.binds(p), tests && matchAny(harnesses, p):
		default:
			queue = append(queue, p)
		}
	}
	for _, p := range first {
		visit(p, from)
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if n := g.pkgs[p]; n != nil {
			for _, q := range n.imports {
				visit(q, p)
			}
		}
	}
	sort.Strings(found)
	chains := make([][]string, 0, len(found))
	for _, p := range found {
		var chain []string
		for q := p; q != ""; q = parent[q] {
			chain = append(chain, q)
		}
		slices.Reverse(chain)
		chains = append(chains, chain)
	}
	return chains
}

// unmatched returns the patterns of rules and harnesses that match no
// package of g: a rule naming a package that was moved or renamed would
// otherwise hold without checking anything.
func unmatched(g *graph, rules []rule) []string {
	var out []string
	test := func(where string, patterns []string) {
		for _, pat := range patterns {
			found := false
			for p := range g.pkgs {
				found = found || match(pat, p)
			}
			if !found {
				out = append(out, fmt.Sprintf("%s: %q matches no package", where, pat))
			}
		}
	}
	for _, r := range rules {
		test(r.What+" (from)", r.From)
		test(r.What+" (except)", r.Except)
		test(r.What+" (to)", r.To)
	}
	test("harnesses", harnesses)
	return out
}
