package docscheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Quoted measurements (issue 24, item 2): every number README.md or
// paper/*.md quotes as measured comes from a committed run.
//
// What counts as a quoted measurement, outside fenced code blocks and code
// spans:
//
//   - a number followed by a rate unit: msg/s, messages/s, rec/s,
//     records/s, MB/s, MiB/s, GB/s, GiB/s (with an M or k written
//     before the unit or attached to the number: 2.5M msg/s, 302k);
//   - a percentage of a limit: "N% of" followed, within three words, by
//     disk, loopback, link, limit, stream, read, write, cold or fetch
//     (60% of disk write, 52% of the disk's write limit, 99.5% of the
//     1 Gbit link);
//   - a time in ms, µs or s that a percentile or average names on its
//     left: p50, p99, p99.9, p999, median, mean (p99 10.8-11.8 s);
//   - every number in a table column whose header names a rate unit
//     (| msg/s |, | MB/s |, | Messages/s |), unless the header says "paper"
//     or it is the first column (the rows' names: batch 1).
//
// With a unit, the numbers just before it joined by ranges, slashes,
// brackets, "to", "or" and system names ("and" only before one) count too: in
// "2,463,748 [1,222,014-2,482,484] msg/s" all three, in
// "ActiveMQ 13,990 / 14,691 and RabbitMQ 7,173 / 15,521 msg/s" all four.
//
// A quoted measurement passes when the number, as written (commas and
// decimals included), has at least four digits and is a number of some
// file under paper/results/ (a report, runs.csv, runs.json), or when its
// paragraph (a list item, a table row) links a file under paper/results/:
// that is where prose may round (about 2.5M msg/s) or combine numbers of
// the run. The paper's own figures and
// the configuration the text states (offered loads, the pipeline's rate)
// are not measurements: cited lists them, each with its reason.

// numberRE is a number as the guide writes it: 2,463,748, 0.6, 302k, 2.42M.
const numberRE = `(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?`

var (
	// chainRE is a run of numbers joined as the guide joins them, ending
	// right before a unit.
	chainRE = regexp.MustCompile(`(?:(?:ActiveMQ|RabbitMQ|Kafka)\s+)?` + numberRE + `[kMG]?` +
		`(?:\s*(?:-|–|/|\[|\]|\bto\b|\bor\b|\band\s+(?:ActiveMQ|RabbitMQ|Kafka)\b|(?:ActiveMQ|RabbitMQ|Kafka)\b)\s*(?:(?:ActiveMQ|RabbitMQ|Kafka)\s+)?` + numberRE + `[kMG]?)*` +
		`\]?\s*(?:[kMG]\s+)?` + `(?:msg/s|messages/s|rec/s|records/s|MB/s|MiB/s|GB/s|GiB/s)`)
	percentRE = regexp.MustCompile(`(` + numberRE + `%)\s+of\s+(?:(?:the|its|a|this)\s+)?(?:[\w-]+'s\s+)?(?:[\w-]+\s+){0,2}(?:disk|loopback|link|limit|stream|read|write|cold|fetch)`)
	latencyRE = regexp.MustCompile(`\b(?:p50|p99|p99\.9|p999|median|mean)\s+(` + numberRE + `(?:\s*(?:-|–|/)\s*` + numberRE + `)*)\s*(?:ms|µs|s)\b`)
	numRE     = regexp.MustCompile(numberRE + `[kMG]?%?`)
	rateHead  = regexp.MustCompile(`(?i)msg/s|messages/s|MB/s`)
	// resultTokRE finds the numbers of a result file.
	resultTokRE = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?%?`)
)

// cited lists numbers with a rate or share unit that the guide quotes from
// elsewhere or states as configuration, each with why it is not measured
// here.
var cited = map[string]string{
	"50,000":  "the paper's producer, batch 1 (Figure 4)",
	"400,000": "the paper's producer, batch 50 (Figure 4)",
	"22,000":  "the paper's consumer (Figure 5)",
	"821,557": "Kreps 2014, one producer without replication",
	"786,980": "Kreps 2014, 3x replication, acks=1",
	"421,823": "Kreps 2014, 3x replication, acks=all",
	"200":     "the pipeline's offered rate (§4's producers), configuration",
	"10,000":  "an offered load of the replication part's latency runs, configuration",
	"100,000": "an offered load of the replication part's latency runs, configuration",
	"1,500":   "the fault suite's offered rate, configuration",
	"500":     "the fault suite's offered rate per partition, configuration",
	"100":     "the pipeline's audit producers' rate each, configuration",
	"50k":     "the paper's producer, batch 1, rounded",
	"400k":    "the paper's producer, batch 50, rounded",
	"22k":     "the paper's consumer, rounded",
}

// Quote is one number the guide quotes as measured.
type Quote struct {
	Line   int    // 1-based
	Number string // as written: 2,463,748, 60%, 2.42M
	Linked bool   // its paragraph links a file under paper/results/
}

// Quotes returns the measured numbers of a document under the rule above.
func Quotes(doc, content string) []Quote {
	var out []Quote
	lines := strings.Split(content, "\n")
	inFence := fenced(lines)
	linked := linkedParagraphs(doc, lines, inFence)
	// measuredCols and paperCols are the columns of the table being read
	// whose header names a rate unit, and the paper.
	var measuredCols, paperCols map[int]bool
	for i, line := range lines {
		if inFence[i] {
			measuredCols, paperCols = nil, nil
			continue
		}
		_, rest := scanLine(line)
		linked := linked[i]
		add := func(n string) {
			if _, ok := cited[n]; ok {
				return
			}
			n = strings.TrimRight(n, "kMG")
			if _, ok := cited[n]; ok {
				return
			}
			out = append(out, Quote{Line: i + 1, Number: n, Linked: linked})
		}
		seen := map[string]bool{}
		once := func(n string) {
			if !seen[n] {
				seen[n] = true
				add(n)
			}
		}
		cells := tableCells(rest)
		switch {
		case cells == nil:
			measuredCols, paperCols = nil, nil
		case i+1 < len(lines) && isDelimiterRow(lines[i+1]):
			measuredCols, paperCols = map[int]bool{}, map[int]bool{}
			for c, h := range cells {
				switch {
				case c == 0:
				case strings.Contains(strings.ToLower(h), "paper"):
					paperCols[c] = true
				case rateHead.MatchString(h):
					measuredCols[c] = true
				}
			}
			continue
		case isDelimiterRow(line):
			continue
		default:
			for c, cell := range cells {
				if measuredCols[c] {
					for _, n := range numRE.FindAllString(dropParens(cell), -1) {
						once(n)
					}
				}
			}
		}
		text := rest
		if cells != nil {
			// Paper columns are citations: leave them out of the prose rules.
			text = ""
			for c, cell := range cells {
				if !paperCols[c] {
					text += " | " + cell
				}
			}
		}
		for _, m := range chainRE.FindAllString(text, -1) {
			for _, n := range numRE.FindAllString(m, -1) {
				once(n)
			}
		}
		for _, m := range percentRE.FindAllStringSubmatch(text, -1) {
			once(m[1])
		}
		for _, m := range latencyRE.FindAllStringSubmatch(text, -1) {
			for _, n := range numRE.FindAllString(m[1], -1) {
				once(n)
			}
		}
	}
	return out
}

// tableCells returns the cells of a table row (nil for other lines).
func tableCells(line string) []string {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, "|") {
		return nil
	}
	t = strings.TrimSuffix(strings.TrimPrefix(t, "|"), "|")
	return strings.Split(t, "|")
}

var delimiterRE = regexp.MustCompile(`^\s*\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*$`)

func isDelimiterRow(line string) bool { return delimiterRE.MatchString(line) }

var parenTextRE = regexp.MustCompile(`\([^()]*\)`)

// dropParens removes parentheticals: (median of 3), (report below).
func dropParens(s string) string { return parenTextRE.ReplaceAllString(s, "") }

var (
	listItemRE = regexp.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s`)
	headRE     = regexp.MustCompile(`^\s*#`)
)

// linkedParagraphs reports, per line, whether its paragraph links a file
// under paper/results/. A paragraph ends at a blank line, a fence, a
// heading, a table row (each row is one) and before a list item (each item
// is one, with its continuation lines).
func linkedParagraphs(doc string, lines []string, inFence []bool) []bool {
	out := make([]bool, len(lines))
	start := 0
	flush := func(end int) {
		any := false
		for j := start; j < end; j++ {
			_, rest := scanLine(lines[j])
			any = any || linksResults(doc, rest)
		}
		for j := start; j < end; j++ {
			out[j] = any
		}
		start = end
	}
	for i, l := range lines {
		switch {
		case inFence[i] || strings.TrimSpace(l) == "" || headRE.MatchString(l) || tableCells(l) != nil:
			flush(i)
			flush(i + 1)
		case listItemRE.MatchString(l):
			flush(i)
		}
	}
	flush(len(lines))
	return out
}

// linksResults reports whether a line links a file under paper/results/.
func linksResults(doc, line string) bool {
	for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
		path, _, _ := strings.Cut(m[1], "#")
		if schemeRE.MatchString(path) || path == "" {
			continue
		}
		file := filepath.ToSlash(filepath.Join(pathDir(doc), path))
		if file == "paper/results" || strings.HasPrefix(file, "paper/results/") {
			return true
		}
	}
	return false
}

// ResultNumbers returns every number written in the text files under
// dir (paper/results/), as written there.
func ResultNumbers(dir string) (map[string]bool, error) {
	set := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".md", ".csv", ".json", ".txt":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, tok := range resultTokRE.FindAllString(string(b), -1) {
			tok = strings.TrimRight(tok, ",")
			set[tok] = true
		}
		return nil
	})
	return set, err
}

// distinctive reports whether a number has at least four digits, enough
// that finding it in a result file is no coincidence (runs.json holds
// thousands of numbers: 84, 1.56 or 60% are in it by chance).
func distinctive(n string) bool {
	d := 0
	for _, r := range n {
		if r >= '0' && r <= '9' {
			d++
		}
	}
	return d >= 4
}

// CheckNumbers returns a problem for each measured number of a document
// that is in no file under paper/results/ on a line linking no such file.
func CheckNumbers(doc, content string, results map[string]bool) []Problem {
	var out []Problem
	for _, q := range Quotes(doc, content) {
		if q.Linked || (distinctive(q.Number) && results[q.Number]) {
			continue
		}
		out = append(out, Problem{Doc: doc, Line: q.Line, Msg: fmt.Sprintf(
			"%s is quoted as measured but is in no file under paper/results/, and the line links none", q.Number)})
	}
	return out
}
