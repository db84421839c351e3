package results

import (
	"strconv"
	"strings"
)

// Variant is the configuration a run measured within its experiment: a
// setting and its value ("batch" = "50", "sendfile" = "false"), or a named
// way of running with no value ("one message per send"). In runs.json and
// runs.csv it is written in words: "batch=50", "sendfile=false",
// "transactions of 50 messages", "one message per send".
type Variant struct {
	// Setting is what the variant sets, or the whole description when it has
	// no value.
	Setting string
	// Value is the setting's value; empty for a description.
	Value string
}

// Settings with words of their own.
const (
	// Transactions is a peer producer that commits a transaction every Value
	// messages.
	Transactions = "transactions"
)

// Variants of the paper's comparison (Experiment Main).
var (
	// VariantOnePerSend is a peer producer sending one message per send, as the
	// paper ran ActiveMQ and RabbitMQ.
	VariantOnePerSend = Variant{Setting: "one message per send"}
	// VariantConsumer is every system's consumer run; Kafka's reads its log
	// from the page cache (hot).
	VariantConsumer = Variant{Setting: "prefetch ~1000 messages"}
	// VariantConsumerCold is Kafka's consumer reading the same log after it
	// was dropped from the page cache: from the disk (issue 14).
	VariantConsumerCold = Variant{Setting: "prefetch ~1000 messages, cold cache"}
)

// Setting returns the variant that sets name to value ("name=value").
func Setting(name, value string) Variant { return Variant{Setting: name, Value: value} }

// SettingInt returns the variant that sets name to the number n.
func SettingInt(name string, n int64) Variant { return Setting(name, strconv.FormatInt(n, 10)) }

// VariantBatch names a Kafka producer run with the given batch size.
func VariantBatch(n int) Variant { return SettingInt("batch", int64(n)) }

// VariantTx names a peer producer run that commits a transaction every n
// messages: the peers' nearest notion of a batch, though every message is still
// sent on its own.
func VariantTx(n int) Variant { return SettingInt(Transactions, int64(n)) }

// VariantBrokers names a scale-out run with n broker hosts.
func VariantBrokers(n int) Variant { return SettingInt("brokers", int64(n)) }

// IsZero reports whether v is the zero Variant (a wildcard in Select).
func (v Variant) IsZero() bool { return v == Variant{} }

// String renders v in words, as runs.json and the report show it.
func (v Variant) String() string {
	switch {
	case v.Setting == Transactions && v.Value != "":
		return "transactions of " + v.Value + " messages"
	case v.Value == "":
		return v.Setting
	}
	return v.Setting + "=" + v.Value
}

// slug is v within a run's ID: its words, but "tx=N" for transactions.
func (v Variant) slug() string {
	if v.Setting == Transactions && v.Value != "" {
		return "tx=" + v.Value
	}
	return v.String()
}

// ParseVariant reads a variant from its words (String's output).
func ParseVariant(s string) Variant {
	if rest, ok := strings.CutPrefix(s, "transactions of "); ok {
		if n, ok := strings.CutSuffix(rest, " messages"); ok {
			return Variant{Setting: Transactions, Value: n}
		}
	}
	if name, value, ok := strings.Cut(s, "="); ok {
		return Variant{Setting: name, Value: value}
	}
	return Variant{Setting: s}
}

// MarshalText writes v in words.
func (v Variant) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads v from its words.
func (v *Variant) UnmarshalText(b []byte) error {
	*v = ParseVariant(string(b))
	return nil
}
