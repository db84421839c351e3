package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a small module in testdata/repo: package wire (Checksum in
// crc.go; Log, Log.read with four parameters, the variadic Log.Append in
// message.go; TestChecksum, BenchmarkAppend), scripts and docs.
func fixture(t *testing.T) *Index {
	t.Helper()
	ix, err := NewIndex(filepath.Join("testdata", "repo"))
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// TestCheckDocFindsAndSpares runs the reference checks on one line each:
// what they must find, and what they must leave alone (Kafka's names,
// configuration keys, file names, the standard library, prose).
func TestCheckDocFindsAndSpares(t *testing.T) {
	ix := fixture(t)
	for _, tc := range []struct {
		line string
		want string // a substring of the one problem, "" for none
	}{
		// Tests, with and without their package.
		{"`wire` `TestChecksum`, `BenchmarkAppend`", ""},
		{"`wire TestChecksum`", ""},
		{"run `go test -run '^TestChecksum$' ./wire`", ""},
		{"`TestCheck...` is abbreviated", ""},
		{"`TestChecksum/sub`", ""},
		{"`TestGone`", "no test, benchmark or fuzz target `TestGone`"},
		{"`wire` `TestChecksum`, `FuzzGone`", "no test, benchmark or fuzz target `FuzzGone`"},
		{"`docs` `TestChecksum`", "`TestChecksum` is not in `docs` (it is in `wire`)"},
		// Names in their file or package.
		{"`wire/crc.go` `Checksum`", ""},
		{"`wire/message.go` `Checksum`", "`Checksum` is not in `wire/message.go` (it is in `wire/crc.go`)"},
		{"`wire/crc.go` `Checksum`, `Log.Append`", "`Log.Append` is not in `wire/crc.go`"},
		{"`wire/crc.go` `Checksum` (the CRC), and `Log.Append`", "`Log.Append` is not in `wire/crc.go`"},
		{"`wire/crc.go` `Checksum`; `message.go` `Log.Append`", ""},
		{"`wire/crc.go` `Checksum`, `message.go`, `Log.Append`", ""},
		{"`wire/crc.go` `Checksum`; the log's `Log.Append`", ""},
		{"`wire/crc.go` `Checksum`, `gone.go`", "no file `gone.go` in `wire`"},
		{"`wire/crc.go` `Gone`", "`Gone` is not declared in `wire/crc.go`"},
		{"`wire` `Log.read`, `Log.NoDelay`, `Append`", ""},
		{"| `wire/crc.go` | `Log.Append` |", ""},
		// Qualified names.
		{"`wire.Checksum`, `Log.Append`, `wire.Log.Append`", ""},
		{"`wire.Gone`", "`wire.Gone` is not declared in the module"},
		{"`Log.Gone`", "`Log.Gone` is not declared in the module"},
		{"`huffTable.build`", "no type or package `huffTable` in the module"},
		// Calls and their arguments.
		{"`Log.read(offset, maxBytes, limit, boundary)`", ""},
		{"`Log.read(offset, maxBytes, limit)`", "gives 3 arguments; the declaration has 4 parameters"},
		{"`Log.Append(a, b, c)` and `Log.Append()`", ""},
		{"`wire.Checksum(...)`", ""},
		// Paths and links.
		{"`wire/crc.go`, `wire/`, `docs/guide.md`, `scripts/run.sh --flag`", ""},
		{"`wire/gone.go`", "no file or directory `wire/gone.go`"},
		{"`docs/*.md`, `scripts/NAME/x.sh`, `docs/DOC`", "no file or directory `scripts/NAME/x.sh`"},
		{"`docs/*.md`, `docs/DOC`, `wire/NAME`", ""},
		{"`bin/kafka-server` is built", ""},
		{"`/work/shared/paper`", "outside the repository"},
		{"[the guide](guide.md), [a part](guide.md#two-words), [here](#title)", ""},
		{"[the guide](guide.md#three)", "no heading with anchor #three in `docs/guide.md`"},
		{"[gone](gone.md)", "link `gone.md`: no file `docs/gone.md`"},
		{"[gone](#gone)", "link `#gone`: no heading with anchor #gone in this document"},
		{"[out](../../x.md)", "leaves the repository"},
		{"[web](https://example.com/a.md), [mail](mailto:a@b.c)", ""},
		// A handout's table: the name, then its file.
		{"| `Checksum(payload)` | `crc.go` | what it does |", ""},
		{"| `Checksum(payload)` | `message.go` | what it does |", "`Checksum` is not in a file `message.go` (it is in `wire/crc.go`)"},
		// Not the module's: left alone.
		{"`broker.list`, `log.flush.interval`, `wire.size`, `batch.size`", ""},
		{"`server.properties`, `zkCli.sh`, `message.go`", ""},
		{"`io.ReadAll`, `String.hashCode`, `rc.Write`, `math.abs`", ""},
		{"`consumer`, `Config`, `Dirty`, `acks=all`, `-1`, `nil`", ""},
		{"`wire/crc.go` `consumer`, `register`", ""},
		{"``code with ` inside``", ""},
	} {
		content := "# Title\n\n" + tc.line + "\n"
		probs := ix.CheckDoc("docs/case.md", content)
		switch {
		case tc.want == "" && len(probs) > 0:
			t.Errorf("%s: found %v, want nothing", tc.line, probs)
		case tc.want != "" && (len(probs) != 1 || !strings.Contains(probs[0].Msg, tc.want)):
			t.Errorf("%s: found %v, want one problem with %q", tc.line, probs, tc.want)
		case len(probs) == 1 && probs[0].Line != 3:
			t.Errorf("%s: reported at line %d, want 3", tc.line, probs[0].Line)
		}
	}
}

// TestCheckDocSkipsCodeBlocks leaves fenced blocks alone: commands and
// output, not references.
func TestCheckDocSkipsCodeBlocks(t *testing.T) {
	ix := fixture(t)
	doc := "```sh\n`TestGone` [x](gone.md)\n```\n~~~\n`wire.Gone`\n~~~\n`TestGone`\n"
	probs := ix.CheckDoc("docs/case.md", doc)
	if len(probs) != 1 || probs[0].Line != 7 {
		t.Errorf("found %v, want one problem at line 7", probs)
	}
}

// TestLedgerPairsCommentsAndRows pairs the fixture's comments (on the
// package, a field, the file, inside a method, in two scripts; one only
// quotes the marker) with the ledger's rows.
func TestLedgerPairsCommentsAndRows(t *testing.T) {
	ix := fixture(t)
	devs, err := ix.Deviations()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range devs {
		got = append(got, d.File+":"+strings.Join(d.Names, ","))
	}
	want := []string{"scripts/other.sh:", "scripts/run.sh:", "wire/message.go:package",
		"wire/message.go:Log.NoDelay", "wire/message.go:file", "wire/message.go:Log.Append"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("comments on\n %v\nwant\n %v", got, want)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "repo", "docs", "deviations.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := LedgerRows(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want the 6 of section 1: %+v", len(rows), rows)
	}
	var msgs []string
	for _, p := range CheckLedger(devs, rows) {
		msgs = append(msgs, p.String())
	}
	wantMsgs := []string{
		"scripts/other.sh:2: `Deviation:` on the file has no row",
		"paper/deviations.md:12: row for `wire/crc.go` (`Checksum`): no `Deviation:` comment",
	}
	if len(msgs) != len(wantMsgs) {
		t.Fatalf("problems %q, want %d", msgs, len(wantMsgs))
	}
	for i, w := range wantMsgs {
		if !strings.HasPrefix(msgs[i], w) {
			t.Errorf("problem %q, want it to start %q", msgs[i], w)
		}
	}
	if _, err := LedgerRows("# no section\n"); err == nil {
		t.Error("a ledger without its section was accepted")
	}
}
