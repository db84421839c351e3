package docscheck

import (
	"strings"
	"testing"
)

// TestQuotesFindsAndSpares applies the rule of numbers.go to one paragraph
// each: the numbers it must take as measured, and those it must leave alone
// (configuration, the paper's figures, shares that are not of a limit).
func TestQuotesFindsAndSpares(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string // the measured numbers, space-separated
	}{
		{"batch 50 2,463,748 [1,222,014-2,482,484] msg/s here", "2,463,748 1,222,014 2,482,484"},
		{"ActiveMQ 13,990 / 14,691 and RabbitMQ 7,173 / 15,521 msg/s", "13,990 14,691 7,173 15,521"},
		{"about 2.5 M msg/s, 520 MB/s into the page cache", "2.5 520"},
		{"0.53-1.05M msg/s in the container", "0.53 1.05"},
		{"835 MB/s, **52% of the disk's write limit**", "835 52%"},
		{"99.5% of the 1 Gbit link", "99.5%"},
		{"64% of it in `memmove`, 10-70% of a core, 60% of the time", ""},
		{"mean 4.8-5.2 s, p99 10.8-11.8 s", "4.8 5.2 10.8 11.8"},
		{"every 100 ms, a 500 ms tick, 5 s cap", ""},
		{"the paper's 50,000 msg/s; 200 msg/s offered", ""},
		{"`2,000,000 msg/s` in a code span", ""},
		{"```\n9,999 msg/s in a fence\n```", ""},
		{"| figure | msg/s | paper |\n|---|---|---|\n| batch 1 | 399,681 [247,715-718,519] (median of 5) | 52,000 |", "399,681 247,715 718,519"},
	} {
		var got []string
		for _, q := range Quotes("README.md", tc.text) {
			got = append(got, q.Number)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%q: got %q, want %q", tc.text, g, tc.want)
		}
	}
}

// TestCheckNumbersLinkedParagraph: a number in no result passes when its
// paragraph (not only its line) links a file under paper/results/, and
// fails otherwise; a number a result holds passes.
func TestCheckNumbersLinkedParagraph(t *testing.T) {
	results := map[string]bool{"313,183": true, "84": true}
	for _, tc := range []struct {
		doc, text string
		fails     int
	}{
		{"README.md", "batch 1 313,183 msg/s", 0},
		{"README.md", "batch 1 about 310k msg/s", 1},
		{"README.md", "batch 1 at 84 MB/s", 1}, // too short to be found by chance
		{"README.md", "Measured there ([report](paper/results/testbed/report.md),\nabout 571,891 msg/s)", 0},
		{"paper/sections.md", "see [the run](results/report.md):\nabout 2.5M msg/s", 0},
		{"README.md", "see [the run](paper/results/report.md).\n\nabout 2.5M msg/s", 1},
		{"README.md", "- [run](paper/results/report.md)\n- about 2.5M msg/s", 1},
	} {
		if got := CheckNumbers(tc.doc, tc.text, results); len(got) != tc.fails {
			t.Errorf("%q: %d problems %v, want %d", tc.text, len(got), got, tc.fails)
		}
	}
}
