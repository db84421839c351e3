// Command testsummary reads `go test -json` on stdin and prints what a plain
// `go test` prints (one line per package, the output of failing tests), then
// one line naming every skipped test and why, so that a skip in `make test`
// is never silent. It exits 1 if any test or package failed, or if the stream
// held no result at all.
//
//	go test -json ./... | go run ./scripts/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of test2json's output (go doc test2json). Since Go 1.24,
// build errors arrive as events of their own ("build-output", "build-fail"),
// keyed by ImportPath instead of Package.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type key struct{ pkg, test string }

func main() {
	failed, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

// summarize copies the stream's verdicts to w and reports whether anything
// failed.
func summarize(r io.Reader, w io.Writer) (failed bool, err error) {
	output := map[key][]string{} // buffered output per test (and per package, test "")
	var skips []string
	results := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			// Not test2json (a build error printed by go itself): pass it on.
			fmt.Fprintln(w, string(line))
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "build-fail":
			failed = true
		case "output":
			output[k] = append(output[k], e.Output)
		case "fail":
			failed = true
			if e.Test != "" {
				fmt.Fprint(w, strings.Join(output[k], ""))
			} else {
				results++
				// The package's own output ends with go test's "FAIL pkg"
				// line, unless it failed before printing one (a timeout).
				out := strings.Join(output[k], "")
				fmt.Fprint(w, out)
				if !strings.Contains(out, "FAIL\t"+e.Package) {
					fmt.Fprintf(w, "FAIL\t%s\t%s\n", e.Package, elapsed(e.Elapsed))
				}
			}
			delete(output, k)
		case "skip":
			if e.Test != "" {
				skips = append(skips, fmt.Sprintf("%s.%s (%s)", short(e.Package), e.Test, reason(output[k])))
			} else {
				results++
				fmt.Fprintf(w, "?   \t%s\t[no test files]\n", e.Package)
			}
			delete(output, k)
		case "pass":
			if e.Test == "" {
				results++
				fmt.Fprintf(w, "ok  \t%s\t%s\n", e.Package, elapsed(e.Elapsed))
			}
			delete(output, k)
		}
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	sort.Strings(skips)
	if len(skips) == 0 {
		fmt.Fprintln(w, "skipped: none")
	} else {
		fmt.Fprintf(w, "skipped: %d: %s\n", len(skips), strings.Join(skips, "; "))
	}
	if results == 0 {
		return true, fmt.Errorf("no test results in the input")
	}
	return failed, nil
}

// reason is the message of a skipped test's t.Skip: its last output line
// other than the "--- SKIP" line, without the file:line prefix.
func reason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if _, after, ok := strings.Cut(l, ".go:"); ok {
			if _, msg, ok := strings.Cut(after, ": "); ok {
				return msg
			}
		}
		return l
	}
	return "no reason given"
}

func short(pkg string) string {
	if i := strings.Index(pkg, "/kafka/"); i >= 0 {
		return pkg[i+len("/kafka/"):]
	}
	return pkg
}

func elapsed(s float64) string { return fmt.Sprintf("%.3fs", s) }
