package props

// Binding is a component's table bound to one config value, for a command
// that binds the component's keys beside its own: kafka-server binds the
// replication layer's (replica.Keys) beside the broker's, so the layer's
// keys are read from the same server.properties and flags without being
// fields of the broker's config.
type Binding interface {
	// Names lists the keys, in documentation order.
	Names() []string
	// Doc returns the kind and help text of the named key (ok false:
	// not a key of this table).
	Doc(name string) (kind, help string, ok bool)
	// Show returns the text form of the named key's value.
	Show(name string) string
	// Set parses value into the named key's field, wrapped as Wrap does.
	Set(name, value string) error
	// Check reports whether Set would accept value, without storing it.
	Check(name, value string) error
}

// Bind returns t bound to c; errors name the component as t does.
func Bind[C any](t *Table[C], c *C) Binding { return bound[C]{t: t, c: c} }

type bound[C any] struct {
	t *Table[C]
	c *C
}

func (b bound[C]) Names() []string { return b.t.Names() }

func (b bound[C]) Doc(name string) (string, string, bool) {
	k := b.t.Lookup(name)
	if k == nil {
		return "", "", false
	}
	return k.kind, k.help, true
}

func (b bound[C]) Show(name string) string {
	v, _ := b.t.Get(b.c, name)
	return v
}

func (b bound[C]) Set(name, value string) error { return Wrap(b.t.what, b.t.Set(b.c, name, value)) }

func (b bound[C]) Check(name, value string) error {
	scratch := *b.c
	return Wrap(b.t.what, b.t.Set(&scratch, name, value))
}
