package props

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := strings.Join([]string{
		"# Kafka 0.7 server.properties",
		"! also a comment",
		"",
		"   \t",
		"brokerid=0",
		"port : 9092",
		"  log.dir   /tmp/kafka logs  ",
		"num.partitions=",
		"zk.connect = localhost:2181,\\",
		"             other:2181",
		"key\\ with\\:seps = value\\twith\\u0041escapes",
		"trailing\\\\",
		"next=line",
		"topic.flush.intervals.ms=topic1:1000,topic2:2000\r",
		"# comment ending in a backslash does not continue \\",
		"last=1",
		"unfinished=a\\",
	}, "\n")
	got, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Property{
		{"brokerid", "0", 5},
		{"port", "9092", 6},
		{"log.dir", "/tmp/kafka logs  ", 7},
		{"num.partitions", "", 8},
		{"zk.connect", "localhost:2181,other:2181", 9},
		{"key with:seps", "value\twithAescapes", 11},
		{"trailing\\", "", 12},
		{"next", "line", 13},
		{"topic.flush.intervals.ms", "topic1:1000,topic2:2000", 14},
		{"last", "1", 16},
		{"unfinished", "a", 17},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"a=\\u12", "a=\\uzzzz", "\\u00"} {
		if _, err := Parse(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: err = %v", in, err)
		}
	}
}

// FuzzParse: any input parses or fails cleanly, and what parses
// is stable: writing it back escaped and parsing again gives the same.
func FuzzParse(f *testing.F) {
	f.Add("a=b\nc : d\n# x\ne f\\\n  g\n")
	f.Add("k\\ey=\\u0041\\t\\\\")
	f.Fuzz(func(t *testing.T, in string) {
		props, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		var b strings.Builder
		for _, p := range props {
			b.WriteString(escapeProperty(p.Key, true) + "=" + escapeProperty(p.Value, false) + "\n")
		}
		again, err := Parse(strings.NewReader(b.String()))
		if err != nil {
			t.Fatalf("re-parsing %q: %v", b.String(), err)
		}
		if len(again) != len(props) {
			t.Fatalf("%d properties, then %d", len(props), len(again))
		}
		for i := range props {
			if again[i].Key != props[i].Key || again[i].Value != props[i].Value {
				t.Fatalf("property %d: %q=%q, then %q=%q", i, props[i].Key, props[i].Value, again[i].Key, again[i].Value)
			}
		}
	})
}

// escapeProperty writes s so that Parse reads it back.
func escapeProperty(s string, key bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		r := s[i]
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\f':
			b.WriteString(`\f`)
		case (key || i == 0) && (r == ' ' || r == '=' || r == ':' || r == '#' || r == '!'):
			b.WriteByte('\\')
			b.WriteByte(r)
		default:
			b.WriteByte(r)
		}
	}
	return b.String()
}
