package group

import (
	"context"
	"fmt"

	"github.com/netdb11/kafka/zkcoord"
)

// TopicFilter chooses the topics of a wildcard subscription: 0.7's
// TopicFilter, a Java-style regular expression that a topic's whole name
// must match (Whitelist) or must not match (Blacklist). Build it with
// Whitelist or Blacklist.
//
// As 0.7's TopicFilter, the expression is normalized before use: surrounding
// spaces and quotes are removed, spaces are dropped, and every ',' becomes
// '|', so "a,b" means the topics a and b.
//
// Deviation: 0.7 compiles the expression with java.util.regex; here it is
// Go's RE2 syntax, which agrees with Java's on the constructs topic filters
// use (classes, alternation, repetition, anchors) and refuses
// back-references and look-arounds with a clear error. The registry keeps
// the expression's text, so a 0.7 consumer in the same group reads it.
type TopicFilter struct {
	// Regex is the expression as given.
	Regex string
	// Exclude makes it a blacklist: topics that do not match are consumed.
	Exclude bool
}

// Whitelist consumes every topic whose name matches regex.
func Whitelist(regex string) TopicFilter { return TopicFilter{Regex: regex} }

// Blacklist consumes every topic whose name does not match regex.
func Blacklist(regex string) TopicFilter { return TopicFilter{Regex: regex, Exclude: true} }

// subscription is the filter's registry value with streams streams.
func (f TopicFilter) subscription(streams int) (zkcoord.Subscription, error) {
	return zkcoord.WildcardSubscription(f.Regex, f.Exclude, streams)
}

// Validate reports an expression that does not compile.
func (f TopicFilter) Validate() error {
	_, err := f.subscription(1)
	return err
}

// Allows reports whether the filter takes topic (false for an invalid filter).
func (f TopicFilter) Allows(topic string) bool {
	s, err := f.subscription(1)
	return err == nil && s.Matches(topic)
}

// String is the normalized expression, prefixed "whitelist:" or "blacklist:".
func (f TopicFilter) String() string {
	kind := "whitelist:"
	if f.Exclude {
		kind = "blacklist:"
	}
	if s, err := f.subscription(1); err == nil {
		return kind + s.Pattern
	}
	return kind + f.Regex
}

// NewByFilter joins the group with a wildcard subscription (0.7's
// createMessageStreamsByFilter): numStreams streams, each fed with the
// partitions of every topic the filter allows, now or later. It registers
// /consumers/<group>/ids/<consumerId> with 0.7's wildcard value,
// "*<numStreams>*<regex>" for a whitelist and "!<numStreams>!<regex>" for a
// blacklist (0.7's TopicCount.dbString; 0.7.2's tools and consumers read it),
// and watches /brokers/topics: a topic created later that the filter allows
// is rebalanced in (Paper §3.2: a change in the registry starts a rebalance),
// its partitions split among the group's threads as those of any topic
// (Algorithm 1 runs per topic). The streams are FilterStreams; each Message
// says its Topic. Every member of a group should use the same filter, as in
// 0.7 (members with other subscriptions share only the topics both take).
//
// A new topic is seen as soon as a broker registers it in ZooKeeper, that is
// after its first message reached a broker; the consumer then starts at the
// group's committed offset or autooffset.reset's (smallest by default: a new
// topic is read from its first message).
func NewByFilter(ctx context.Context, cfg Config, filter TopicFilter, numStreams int) (*Consumer, error) {
	sub, err := filter.subscription(numStreams)
	if err != nil {
		return nil, fmt.Errorf("group: %w", err)
	}
	return newConsumer(ctx, cfg, sub)
}

// FilterStreams returns the streams of a consumer made by NewByFilter, in
// thread order (nil for a static subscription). Stream n delivers the
// messages of every partition owned by thread "<consumerId>-<n>", whatever
// their topic.
func (c *Consumer) FilterStreams() []*Stream { return c.filterStreams }
