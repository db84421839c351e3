// Package props binds Kafka's property keys (producer.properties,
// consumer.properties) to the fields of a client's config struct, each with
// its bounds: one table per component, from which Set parses and checks a
// key's value and Validate checks every field, so each rule is written once
// and each bad key gets one precise message, "key=value: why".
//
// The producer and the group consumer each declare one Table.
package props

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Key is one property bound to a field of a config C.
type Key[C any] struct {
	name  string
	set   func(c *C, v string) error
	check func(c *C) error // nil: any value is valid
	when  func(c *C) bool  // nil: always checked
}

// Name returns the property's key.
func (k Key[C]) Name() string { return k.name }

// When makes Validate check the field only when cond holds (e.g. ZooKeeper
// timeouts only when zk.connect is set). Set always checks it.
func (k Key[C]) When(cond func(c *C) bool) Key[C] { k.when = cond; return k }

// Invalid is the one format of a bad value: "key=value: why".
func Invalid(key string, value any, why string) error {
	return fmt.Errorf("%s=%v: %s", key, value, why)
}

// bounds describes [lo, hi] in words, as the messages say it.
func bounds(lo, hi int64, note string) string {
	var s string
	switch {
	case lo == 0 && hi == math.MaxInt64:
		s = "must not be negative"
	case lo == 1 && hi == math.MaxInt64:
		s = "must be positive"
	case hi == math.MaxInt64:
		s = fmt.Sprintf("must be at least %d", lo)
	default:
		s = fmt.Sprintf("must be in %d..%d", lo, hi)
	}
	if note != "" {
		s += " (" + note + ")"
	}
	return s
}

// Int binds an integer property to field, valid in [lo, hi]; note, if any,
// is added to the message of a bad value (e.g. "0: the system's default").
func Int[C any](name string, lo, hi int, note string, field func(c *C) *int) Key[C] {
	check := func(c *C) error {
		if v := *field(c); v < lo || v > hi {
			return Invalid(name, v, bounds(int64(lo), hiOf(hi), note))
		}
		return nil
	}
	return Key[C]{name: name, check: check, set: func(c *C, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return Invalid(name, strconv.Quote(v), "not an integer")
		}
		*field(c) = n
		return check(c)
	}}
}

func hiOf(hi int) int64 {
	if hi == math.MaxInt {
		return math.MaxInt64
	}
	return int64(hi)
}

// Millis binds a property in milliseconds to a Duration field, valid in
// [lo, hi] milliseconds (math.MaxInt64: no upper bound).
func Millis[C any](name string, lo, hi int64, note string, field func(c *C) *time.Duration) Key[C] {
	check := func(c *C) error {
		d := *field(c)
		if lo != math.MinInt64 && d < time.Duration(lo)*time.Millisecond || hi != math.MaxInt64 && d > time.Duration(hi)*time.Millisecond {
			if d%time.Millisecond == 0 {
				return Invalid(name, d.Milliseconds(), bounds(lo, hi, note))
			}
			return Invalid(name, d, bounds(lo, hi, note))
		}
		return nil
	}
	return Key[C]{name: name, check: check, set: func(c *C, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return Invalid(name, strconv.Quote(v), "not a number of milliseconds")
		}
		*field(c) = time.Duration(n) * time.Millisecond
		return check(c)
	}}
}

// Bool binds a true/false property.
func Bool[C any](name string, field func(c *C) *bool) Key[C] {
	return Key[C]{name: name, set: func(c *C, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return Invalid(name, strconv.Quote(v), "want true or false")
		}
		*field(c) = b
		return nil
	}}
}

// String binds a string property (surrounding spaces trimmed); check, if
// not nil, validates the field.
func String[C any](name string, field func(c *C) *string, check func(c *C) error) Key[C] {
	return Key[C]{name: name, check: check, set: func(c *C, v string) error {
		*field(c) = strings.TrimSpace(v)
		if check != nil {
			return check(c)
		}
		return nil
	}}
}

// Func binds a property with its own parser and check (either may do all
// the work; check may be nil).
func Func[C any](name string, set func(c *C, v string) error, check func(c *C) error) Key[C] {
	return Key[C]{name: name, set: set, check: check}
}

// Alias is another name for key (e.g. 0.7.0's backoff.increment.ms); Validate
// does not check it twice.
func Alias[C any](name string, key Key[C]) Key[C] {
	return Key[C]{name: name, set: key.set}
}

// Table is the properties of one component.
type Table[C any] struct {
	what string // "producer", "consumer": names the component in errors
	keys []Key[C]
}

// NewTable returns the table of a component's keys, in documentation order.
func NewTable[C any](what string, keys ...Key[C]) *Table[C] {
	return &Table[C]{what: what, keys: keys}
}

// Names lists the keys.
func (t *Table[C]) Names() []string {
	out := make([]string, len(t.keys))
	for i, k := range t.keys {
		out[i] = k.name
	}
	return out
}

// Set parses value into key's field and checks its bounds.
func (t *Table[C]) Set(c *C, key, value string) error {
	for _, k := range t.keys {
		if k.name == key {
			return k.set(c, value)
		}
	}
	return fmt.Errorf("unknown %s property %q", t.what, key)
}

// Validate checks every field, and returns one error per bad field, joined.
func (t *Table[C]) Validate(c *C) error {
	var errs []error
	for _, k := range t.keys {
		if k.check == nil || (k.when != nil && !k.when(c)) {
			continue
		}
		if err := k.check(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
