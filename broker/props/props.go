// Package props binds Kafka's property keys (producer.properties,
// consumer.properties) to the fields of a client's config struct, each with
// its bounds: one table per component, from which Set parses and checks a
// key's value and Validate checks every field, so each rule is written once
// and each bad key gets one precise message, "key=value: why".
//
// The producer and the group consumer each declare one Table; so do the
// broker's log and server, and the broker's own table takes theirs in
// (Embed). The replication layer's table is not taken in: kafka-server
// binds it beside the broker's (Bind), so the 2011 broker's config has no
// field of the layer's. Keys that become command-line flags carry their kind and help
// (Doc) and show their value (Show).
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
	show  func(c *C) string
	kind  string // for --help: int, bytes, ms, hours, mins, bool, string, map
	help  string
}

// Name returns the property's key.
func (k Key[C]) Name() string { return k.name }

// Doc gives the key the kind of value and the help text --help shows.
func (k Key[C]) Doc(kind, help string) Key[C] { k.kind, k.help = kind, help; return k }

// Kind returns the kind of value set by Doc ("" if none).
func (k Key[C]) Kind() string { return k.kind }

// Help returns the help text set by Doc.
func (k Key[C]) Help() string { return k.help }

// Shown makes Show use show (for keys built with Func).
func (k Key[C]) Shown(show func(c *C) string) Key[C] { k.show = show; return k }

// Show returns the text form of the key's field in c ("" if the key cannot
// show it).
func (k Key[C]) Show(c *C) string {
	if k.show == nil {
		return ""
	}
	return k.show(c)
}

// Embed returns the keys of t as keys of an outer config C, bound to the D
// that field returns: a component's table taken into its owner's.
func Embed[C, D any](t *Table[D], field func(c *C) *D) []Key[C] {
	out := make([]Key[C], len(t.keys))
	for i, k := range t.keys {
		o := Key[C]{name: k.name, kind: k.kind, help: k.help,
			set: func(c *C, v string) error { return k.set(field(c), v) }}
		if k.check != nil {
			o.check = func(c *C) error { return k.check(field(c)) }
		}
		if k.when != nil {
			o.when = func(c *C) bool { return k.when(field(c)) }
		}
		if k.show != nil {
			o.show = func(c *C) string { return k.show(field(c)) }
		}
		out[i] = o
	}
	return out
}

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
// A value out of bounds is refused before it is stored, so a narrow field
// never sees a truncated one.
func Int[C any, T ~int | ~int32 | ~int64](name string, lo, hi int, note string, field func(c *C) *T) Key[C] {
	bad := func(v int64) error {
		if v < int64(lo) || v > int64(hi) {
			return Invalid(name, v, bounds(int64(lo), hiOf(hi), note))
		}
		return nil
	}
	return Key[C]{name: name, kind: "int",
		check: func(c *C) error { return bad(int64(*field(c))) },
		show:  func(c *C) string { return strconv.FormatInt(int64(*field(c)), 10) },
		set: func(c *C, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return Invalid(name, strconv.Quote(v), "not an integer")
			}
			if err := bad(n); err != nil {
				return err
			}
			*field(c) = T(n)
			return nil
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
	return Duration(name, time.Millisecond, lo, hi, note, field)
}

// unitNames names the units of Duration in messages and --help.
var unitNames = map[time.Duration][2]string{
	time.Millisecond: {"milliseconds", "ms"},
	time.Second:      {"seconds", "secs"},
	time.Minute:      {"minutes", "mins"},
	time.Hour:        {"hours", "hours"},
}

// Duration binds a property counting units (Kafka's *.ms, *.mins, *.hours
// keys) to a Duration field, valid in [lo, hi] units (math.MaxInt64: no
// upper bound). With lo 1, a field set in code may be any positive
// duration, shorter than a unit too (tests use short ones).
func Duration[C any](name string, unit time.Duration, lo, hi int64, note string, field func(c *C) *time.Duration) Key[C] {
	names := unitNames[unit]
	check := func(c *C) error {
		d := *field(c)
		low := lo != math.MinInt64 && (lo == 1 && d <= 0 || lo != 1 && d < time.Duration(lo)*unit)
		// Compared in units: hi units may not fit a Duration.
		high := hi != math.MaxInt64 && (int64(d/unit) > hi || int64(d/unit) == hi && d%unit > 0)
		if low || high {
			if d%unit == 0 {
				return Invalid(name, int64(d/unit), bounds(lo, hi, note))
			}
			return Invalid(name, d, bounds(lo, hi, note))
		}
		return nil
	}
	return Key[C]{name: name, kind: names[1], check: check,
		show: func(c *C) string { return formatDuration(*field(c), unit) },
		set: func(c *C, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return Invalid(name, strconv.Quote(v), "not a number of "+names[0])
			}
			if n < lo && lo != math.MinInt64 || n > hi && hi != math.MaxInt64 {
				return Invalid(name, n, bounds(lo, hi, note))
			}
			if n > int64(math.MaxInt64/unit) || n < int64(math.MinInt64/unit) {
				return Invalid(name, n, fmt.Sprintf("too large: at most %d %s", int64(math.MaxInt64/unit), names[0]))
			}
			*field(c) = time.Duration(n) * unit
			return nil
		}}
}

// formatDuration shows d as a count of unit, or as a Go duration when it is
// not a whole number of units (set by a program, not a key).
func formatDuration(d, unit time.Duration) string {
	if d%unit == 0 {
		return strconv.FormatInt(int64(d/unit), 10)
	}
	return d.String()
}

// Bool binds a true/false property.
func Bool[C any](name string, field func(c *C) *bool) Key[C] {
	return Key[C]{name: name, kind: "bool", show: func(c *C) string { return strconv.FormatBool(*field(c)) }, set: func(c *C, v string) error {
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
	return Key[C]{name: name, kind: "string", check: check, show: func(c *C) string { return *field(c) }, set: func(c *C, v string) error {
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
	return Key[C]{name: name, set: key.set, show: key.show, kind: key.kind, help: key.help}
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

// Keys returns the table's keys, in documentation order.
func (t *Table[C]) Keys() []Key[C] { return t.keys }

// Lookup returns the named key, or nil.
func (t *Table[C]) Lookup(name string) *Key[C] {
	for i := range t.keys {
		if t.keys[i].name == name {
			return &t.keys[i]
		}
	}
	return nil
}

// Set parses value into key's field and checks its bounds. A bad value
// leaves c as it was.
func (t *Table[C]) Set(c *C, key, value string) error {
	k := t.Lookup(key)
	if k == nil {
		return fmt.Errorf("unknown %s property %q", t.what, key)
	}
	old := *c
	if err := k.set(c, value); err != nil {
		*c = old
		return err
	}
	return nil
}

// Get returns the text form of key's field.
func (t *Table[C]) Get(c *C, key string) (string, error) {
	k := t.Lookup(key)
	if k == nil {
		return "", fmt.Errorf("unknown %s property %q", t.what, key)
	}
	return k.Show(c), nil
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

// ErrInvalid is wrapped by the errors Each and Wrap return: a bad key of
// any component.
var ErrInvalid = errors.New("invalid configuration")

// Wrap returns err (a bad key's error from Set) as "<what>: invalid
// configuration: <err>", wrapping ErrInvalid; nil stays nil.
func Wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w: %w", what, ErrInvalid, err)
}

// Each wraps each error joined in err (from Validate) as Wrap does, one
// line per bad key; nil stays nil.
func Each(what string, err error) error {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = Wrap(what, e)
	}
	return errors.Join(out...)
}
