package props

import (
	"math"
	"strings"
	"testing"
	"time"
)

type testConfig struct {
	N    int
	D    time.Duration
	B    bool
	S    string
	Zk   string
	ZkMs time.Duration
}

var testKeys = NewTable("test",
	Int("n", 1, 10, "a note", func(c *testConfig) *int { return &c.N }),
	Millis("d", 0, math.MaxInt64, "0: never", func(c *testConfig) *time.Duration { return &c.D }),
	Alias("d.old", Millis("d", 0, math.MaxInt64, "", func(c *testConfig) *time.Duration { return &c.D })),
	Bool("b", func(c *testConfig) *bool { return &c.B }),
	String("s", func(c *testConfig) *string { return &c.S }, nil),
	String("zk", func(c *testConfig) *string { return &c.Zk }, nil),
	Millis("zk.ms", 1, math.MaxInt64, "", func(c *testConfig) *time.Duration { return &c.ZkMs }).
		When(func(c *testConfig) bool { return c.Zk != "" }),
)

func TestSet(t *testing.T) {
	var c testConfig
	for k, v := range map[string]string{"n": " 7", "d": "250", "b": "true", "s": " x ", "zk": "h:1", "zk.ms": "5"} {
		if err := testKeys.Set(&c, k, v); err != nil {
			t.Fatalf("Set(%s, %q): %v", k, v, err)
		}
	}
	if c != (testConfig{N: 7, D: 250 * time.Millisecond, B: true, S: "x", Zk: "h:1", ZkMs: 5 * time.Millisecond}) {
		t.Fatalf("config %+v", c)
	}
	if err := testKeys.Set(&c, "d.old", "9"); err != nil || c.D != 9*time.Millisecond {
		t.Fatalf("alias: %v, %v", err, c.D)
	}
	for _, tc := range []struct{ key, value, want string }{
		{"n", "11", "n=11: must be in 1..10 (a note)"},
		{"n", "x", `n="x": not an integer`},
		{"d", "-1", "d=-1: must not be negative (0: never)"},
		{"d", "1.5", "not a number of milliseconds"},
		{"b", "maybe", "want true or false"},
		{"zk.ms", "0", "zk.ms=0: must be positive"},
		{"nope", "1", `unknown test property "nope"`},
	} {
		if err := testKeys.Set(&c, tc.key, tc.value); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Set(%s, %s) = %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	c := testConfig{N: 0, D: -time.Nanosecond}
	err := testKeys.Validate(&c)
	if err == nil || !strings.Contains(err.Error(), "n=0: must be in 1..10") || !strings.Contains(err.Error(), "d=-1ns: must not be negative") {
		t.Fatalf("Validate = %v", err)
	}
	if strings.Contains(err.Error(), "zk.ms") {
		t.Fatalf("zk.ms checked without zk: %v", err)
	}
	c = testConfig{N: 1, Zk: "h:1"}
	if err := testKeys.Validate(&c); err == nil || !strings.Contains(err.Error(), "zk.ms=0") {
		t.Fatalf("Validate with zk = %v", err)
	}
	if got := strings.Join(testKeys.Names(), ","); got != "n,d,d.old,b,s,zk,zk.ms" {
		t.Fatalf("Names = %s", got)
	}
}

type outerConfig struct {
	Name  string
	Inner testConfig
	Roll  time.Duration
	Sizes map[string]int
}

var outerKeys = NewTable("outer", append([]Key[outerConfig]{
	Duration("roll.hours", time.Hour, 1, math.MaxInt32, "", func(c *outerConfig) *time.Duration { return &c.Roll }).Doc("hours", "roll"),
	TopicCounts("sizes", 1, func(c *outerConfig) *map[string]int { return &c.Sizes }),
}, Embed(testKeys, func(c *outerConfig) *testConfig { return &c.Inner })...)...)

// An embedded table's keys reach the inner config, with their checks;
// Show gives the text form back; units beyond int64 nanoseconds are
// compared in units; a bad value leaves the config as it was.
func TestEmbedShowAndUnits(t *testing.T) {
	var c outerConfig
	for k, v := range map[string]string{"roll.hours": "2000000", "sizes": "a:2,b:3", "n": "4", "zk": "h:1", "zk.ms": "9"} {
		if err := outerKeys.Set(&c, k, v); err != nil {
			t.Fatalf("Set(%s, %s): %v", k, v, err)
		}
	}
	if c.Inner.N != 4 || c.Inner.ZkMs != 9*time.Millisecond || c.Sizes["b"] != 3 {
		t.Fatalf("config %+v", c)
	}
	for k, want := range map[string]string{"roll.hours": "2000000", "sizes": "a:2,b:3", "n": "4", "zk.ms": "9"} {
		if got, err := outerKeys.Get(&c, k); err != nil || got != want {
			t.Errorf("Get(%s) = %q, %v; want %q", k, got, err, want)
		}
	}
	if err := outerKeys.Validate(&c); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := outerKeys.Set(&c, "roll.hours", "2147483647"); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("hours beyond a Duration: %v", err)
	}
	before := c
	if err := outerKeys.Set(&c, "n", "99"); err == nil || c.Inner.N != before.Inner.N {
		t.Fatalf("bad value: %v, N = %d", err, c.Inner.N)
	}
	c.Inner.N, c.Roll = 0, 0
	err := Each("outer", outerKeys.Validate(&c))
	for _, want := range []string{"outer: invalid configuration: roll.hours=0: must be in 1..2147483647", "outer: invalid configuration: n=0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v; want %q", err, want)
		}
	}
	if k := outerKeys.Lookup("roll.hours"); k == nil || k.Kind() != "hours" || k.Help() != "roll" {
		t.Fatalf("Lookup(roll.hours) = %+v", k)
	}
}
