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
