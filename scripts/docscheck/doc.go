// Package docscheck keeps the reading guide true to the code (issue 24). Its
// test, part of `make test` and `make test-short` (it needs no server), reads
// README.md and every Markdown file under paper/ (except paper/results/,
// which holds the reports of past runs as they were written) and checks,
// against an index of the module built with go/ast:
//
//   - every Test..., Benchmark... and Fuzz... name in backticks exists, in
//     the package the text names when it names one (`broker/log
//     TestRollBySize`, or `broker/log` `TestRollBySize`);
//   - every `pkg.Name` whose pkg is a package of the module, and every
//     `Type.Member` whose Type is a type of the module, is declared (a
//     function, method, field, type, variable or constant); a qualifier
//     written as a Go name but declared nowhere (`huffTable.build`) is
//     reported too;
//   - a `Name` or `Type.Member` that follows a file or package path, in a
//     list joined only by commas, "and", "or" and parentheses
//     (`broker/log/log.go` `Log.Append`, `Log.Flush`), is declared in that
//     file or package; a bare file name in the list (`read.go`) moves it to
//     that file of the same package. A handout's table row that gives a
//     name and then, in the next cell, its file is checked the same way;
//   - a call written with its arguments (`Log.read(offset, maxBytes,
//     limit, boundary)`) has as many as the declaration has parameters;
//   - every repository path in backticks (one whose first element is a
//     top-level entry of the repository, such as `broker/wire/crc.go`)
//     exists, upper-case elements and * standing for any name, and every
//     relative link, with its #anchor, resolves inside the repository;
//   - every `Deviation:` comment in the module's Go code (outside tests,
//     whose notes are about the code they test) and in its shell scripts
//     has its row in paper/deviations.md's section of marked deviations
//     (the level-2 heading that mentions `Deviation:`), and every row has
//     a comment in one of its files on a name the row gives.
//
// A third test keeps every number README.md and paper/*.md quote as measured
// true to a committed run: in a file under paper/results/, or rounded in a
// paragraph that links one (the rule is in numbers.go).
//
// What it leaves alone, to keep false alarms rare: fenced code blocks;
// single lower-case words (`consumer` may be prose); all-lower-case dotted
// names the module does not declare (configuration keys such as
// `log.flush.interval`); file names (`server.properties`); names qualified
// by a package the module imports from outside (`io.ReadAll`); and the
// names listed in foreign (refs.go), each with its reason, such as Java's
// `String.hashCode`.
//
// A failure names the document, its line and what is missing. Run it alone
// with `go test ./scripts/docscheck`.
//
// It lives under scripts/ beside the other tools that read the repository
// itself (scripts/course stubs the labs' functions, scripts/testsummary reads
// the tests' output); it is a test, not a command, so that `make test` runs
// it with no new target.
package docscheck
