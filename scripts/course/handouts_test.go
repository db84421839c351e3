package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHandoutsAgreeWithTheIndex: every handout's first paragraph gives the
// time and the prerequisites ("**needs** ...") that the lab's row of
// paper/course/README.md gives, the handout gives its grade command, and
// its grading table has the groups and points of labs.json. Before issue 24
// four handouts gave no grade command and lab 6's prerequisites differed
// from the instructor page's.
func TestHandoutsAgreeWithTheIndex(t *testing.T) {
	c := loadForTest(t)
	index, err := os.ReadFile(filepath.Join(repoRoot, "paper", "course", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := labRows(string(index))
	hours := regexp.MustCompile(`\d+–\d+`)
	for _, lab := range c.Labs {
		row, ok := rows[lab.Number]
		if !ok {
			t.Errorf("paper/course/README.md: no row for lab %d in the table of labs", lab.Number)
			continue
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, "paper", "course", lab.Handout))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		name := "paper/course/" + lab.Handout
		head := firstParagraph(text)
		if want := hours.FindString(row["Time"]); want == "" || !strings.Contains(head, "**time** "+want+" hours") {
			t.Errorf("%s: its first paragraph does not say **time** %s hours, as the README's row (%q)", name, want, row["Time"])
		}
		if want := row["Needs"]; want == "" || !strings.Contains(head, "**needs** "+want) {
			t.Errorf("%s: its first paragraph does not say **needs** %s, as the README's row", name, want)
		}
		if cmd := fmt.Sprintf("`scripts/course.sh grade %d`", lab.Number); !strings.Contains(text, cmd) {
			t.Errorf("%s: does not give the grade command %s", name, cmd)
		}
		for _, g := range lab.Groups {
			if !strings.Contains(text, fmt.Sprintf("\n| %s | %d |", g.Name, g.Points)) {
				t.Errorf("%s: its grading table has no row `| %s | %d |` (labs.json)", name, g.Name, g.Points)
			}
		}
	}
}

// labRows reads the table of labs of the instructor page: for each lab
// number, its cells by column title.
func labRows(index string) map[int]map[string]string {
	out := map[int]map[string]string{}
	var cols []string
	for _, line := range strings.Split(index, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = nil
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cols == nil {
			if len(cells) > 0 && cells[0] == "Lab" {
				cols = cells
			}
			continue
		}
		var n int
		if _, err := fmt.Sscanf(cells[0], "%d", &n); err != nil || len(cells) != len(cols) {
			continue
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = cells[i]
		}
		out[n] = row
	}
	return out
}

// firstParagraph is the text between the title and the next blank line.
func firstParagraph(md string) string {
	_, rest, _ := strings.Cut(md, "\n\n")
	p, _, _ := strings.Cut(rest, "\n\n")
	return strings.ReplaceAll(p, "\n", " ")
}
