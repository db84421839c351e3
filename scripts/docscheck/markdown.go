package docscheck

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Problem is one thing a document says that the repository does not bear out.
type Problem struct {
	Doc  string // document, relative to the root
	Line int    // 1-based
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.Doc, p.Line, p.Msg) }

// piece is a code span, or a table cell's border (sep), of one line.
type piece struct {
	text string
	pos  int
	sep  bool
}

// scanLine splits a line into its code spans and table borders, in order,
// and returns the line with the spans' contents blanked (for links).
func scanLine(line string) (pieces []piece, rest string) {
	b := []byte(line)
	for i := 0; i < len(line); {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			i += 2
		case line[i] == '|':
			pieces = append(pieces, piece{pos: i, sep: true})
			i++
		case line[i] == '`':
			n := 0
			for i+n < len(line) && line[i+n] == '`' {
				n++
			}
			fence := strings.Repeat("`", n)
			j := i + n
			end := -1
			for j < len(line) {
				k := strings.Index(line[j:], fence)
				if k < 0 {
					break
				}
				k += j
				m := 0
				for k+m < len(line) && line[k+m] == '`' {
					m++
				}
				if m == n {
					end = k
					break
				}
				j = k + m
			}
			if end < 0 {
				i += n
				continue
			}
			pieces = append(pieces, piece{text: line[i+n : end], pos: i})
			for k := i; k < end+n; k++ {
				b[k] = ' '
			}
			i = end + n
		default:
			i++
		}
	}
	return pieces, string(b)
}

// fenced reports, per line, whether it belongs to a fenced code block
// (fences included).
func fenced(lines []string) []bool {
	out := make([]bool, len(lines))
	in := ""
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if in == "" {
			if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
				in = t[:3]
				out[i] = true
			}
			continue
		}
		out[i] = true
		if strings.HasPrefix(t, in) {
			in = ""
		}
	}
	return out
}

var headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// anchors returns the anchors GitHub gives a document's headings.
func anchors(content string) map[string]bool {
	lines := strings.Split(content, "\n")
	inFence := fenced(lines)
	seen := map[string]int{}
	out := map[string]bool{}
	for i, l := range lines {
		if inFence[i] {
			continue
		}
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

var mdLinkInHeading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor for a heading: lower case, punctuation dropped,
// spaces made hyphens.
func slug(h string) string {
	h = mdLinkInHeading.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
