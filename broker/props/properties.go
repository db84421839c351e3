package props

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Property is one key/value pair of a Java properties file, with the line
// on which its logical line starts (for error messages).
type Property struct {
	Key, Value string
	Line       int
}

// Parse reads a file in the syntax of java.util.Properties.load, as
// Kafka 0.7 reads server.properties:
//
//   - lines whose first non-blank character is '#' or '!' are comments;
//   - a key ends at the first unescaped '=', ':' or blank, and one '=' or ':'
//     (with blanks around it) separates it from the value;
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading blanks are dropped;
//   - \t \n \r \f \uXXXX are escapes, and a backslash before any other
//     character stands for that character.
//
// Blanks are space, tab and form feed. The properties come back in file
// order; a key given twice appears twice (the last one wins when applied).
func Parse(r io.Reader) ([]Property, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var (
		props   []Property
		logical strings.Builder
		start   int // line where the current logical line began
		cont    bool
	)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if cont {
			line = strings.TrimLeft(line, " \t\f")
		} else {
			trimmed := strings.TrimLeft(line, " \t\f")
			if trimmed == "" || trimmed[0] == '#' || trimmed[0] == '!' {
				continue
			}
			line, start = trimmed, n
			logical.Reset()
		}
		if endsInEscape(line) {
			logical.WriteString(line[:len(line)-1])
			cont = true
			continue
		}
		logical.WriteString(line)
		cont = false
		p, err := parseLogicalLine(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		p.Line = start
		props = append(props, p)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cont {
		p, err := parseLogicalLine(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		p.Line = start
		props = append(props, p)
	}
	return props, nil
}

// endsInEscape reports whether line ends in an odd number of backslashes.
func endsInEscape(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// parseLogicalLine splits a non-comment logical line (leading blanks
// removed) into its unescaped key and value.
func parseLogicalLine(s string) (Property, error) {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || isBlank(c) {
			break
		}
		i++
	}
	i = min(i, len(s))
	rawKey := s[:i]
	j := i
	for j < len(s) && isBlank(s[j]) {
		j++
	}
	if j < len(s) && (s[j] == '=' || s[j] == ':') {
		j++
	}
	for j < len(s) && isBlank(s[j]) {
		j++
	}
	key, err := unescape(rawKey)
	if err != nil {
		return Property{}, err
	}
	value, err := unescape(s[j:])
	if err != nil {
		return Property{}, fmt.Errorf("value of %q: %w", key, err)
	}
	return Property{Key: key, Value: value}, nil
}

// unescape resolves the backslash escapes of a properties key or value.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if len(s)-i-1 < 4 {
				return "", fmt.Errorf("malformed \\uxxxx escape %q", s[i-1:])
			}
			v, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uxxxx escape %q", s[i-1:i+5])
			}
			b.WriteRune(rune(v))
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
