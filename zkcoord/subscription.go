package zkcoord

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Subscription is what one group member consumes, 0.7's TopicCount: the
// value of /consumers/<group>/ids/<consumerId>. Either static (topics, each
// with a number of streams) or a 0.7 wildcard (a whitelist or blacklist
// regex and a number of streams for every matching topic).
type Subscription struct {
	// Topics maps each topic to its number of streams (static only).
	Topics map[string]int
	// Pattern is the wildcard regex, normalized as 0.7's TopicFilter does.
	Pattern string
	// Blacklist inverts Pattern: topics that do not match are consumed.
	Blacklist bool
	// Streams is the number of streams per matching topic (wildcard only).
	Streams int

	re *regexp.Regexp
}

// Wildcard markers of 0.7's TopicCount: "*<streams>*<regex>" and "!<streams>!<regex>".
const (
	whitelistMarker = "*"
	blacklistMarker = "!"
)

// StaticSubscription subscribes to each topic with its number of streams.
func StaticSubscription(topics map[string]int) (Subscription, error) {
	s := Subscription{Topics: make(map[string]int, len(topics))}
	for t, n := range topics {
		s.Topics[t] = n
	}
	return s, s.Validate()
}

// WildcardSubscription subscribes, with streams streams each, to every topic
// whose whole name matches regex (or, with blacklist, does not). The regex is
// normalized as 0.7 does: trimmed, commas become "|", spaces and surrounding
// quotes are removed.
func WildcardSubscription(regex string, blacklist bool, streams int) (Subscription, error) {
	r := strings.TrimSpace(regex)
	r = strings.ReplaceAll(r, ",", "|")
	r = strings.ReplaceAll(r, " ", "")
	r = strings.TrimLeft(r, `"'`)
	r = strings.TrimRight(r, `"'`)
	s := Subscription{Pattern: r, Blacklist: blacklist, Streams: streams}
	if err := s.Validate(); err != nil {
		return Subscription{}, err
	}
	return s, nil
}

// IsWildcard reports whether s is a whitelist or blacklist subscription.
func (s Subscription) IsWildcard() bool { return s.Topics == nil }

// Validate checks stream counts, topic names and the wildcard regex.
// Java's and Go's regex dialects agree on the common syntax; a pattern Go
// cannot compile is refused.
func (s *Subscription) Validate() error {
	if !s.IsWildcard() {
		if len(s.Topics) == 0 {
			return fmt.Errorf("zkcoord: subscription has no topic")
		}
		for t, n := range s.Topics {
			if err := ValidateName("topic", t); err != nil {
				return err
			}
			if n < 1 {
				return fmt.Errorf("zkcoord: topic %q: streams must be at least 1, got %d", t, n)
			}
		}
		return nil
	}
	if s.Streams < 1 {
		return fmt.Errorf("zkcoord: wildcard subscription: streams must be at least 1, got %d", s.Streams)
	}
	if s.Pattern == "" {
		return fmt.Errorf("zkcoord: wildcard subscription: empty pattern")
	}
	re, err := regexp.Compile("^(?:" + s.Pattern + ")$")
	if err != nil {
		return fmt.Errorf("zkcoord: wildcard subscription %q: %w", s.Pattern, err)
	}
	s.re = re
	return nil
}

// String is the registry value, exactly as 0.7 writes it: `{ "t1": 2,"t2": 1 }`
// (topics sorted here; 0.7 wrote its hash map's order), or "*<n>*<regex>" /
// "!<n>!<regex>" for a wildcard.
func (s Subscription) String() string {
	if s.IsWildcard() {
		m := whitelistMarker
		if s.Blacklist {
			m = blacklistMarker
		}
		return m + strconv.Itoa(s.Streams) + m + s.Pattern
	}
	topics := make([]string, 0, len(s.Topics))
	for t := range s.Topics {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	var b strings.Builder
	b.WriteString("{ ")
	for i, t := range topics {
		if i > 0 {
			b.WriteByte(',')
		}
		q, _ := json.Marshal(t) // a string always marshals
		b.Write(q)
		b.WriteString(": ")
		b.WriteString(strconv.Itoa(s.Topics[t]))
	}
	b.WriteString(" }")
	return b.String()
}

var wildcardRE = regexp.MustCompile(`^([*!])(\d+)([*!])(.*)$`)

// ParseSubscription parses the value of /consumers/<group>/ids/<consumerId>
// as written by 0.7 (or by String).
func ParseSubscription(v string) (Subscription, error) {
	if strings.HasPrefix(v, whitelistMarker) || strings.HasPrefix(v, blacklistMarker) {
		m := wildcardRE.FindStringSubmatch(v)
		if m == nil || m[1] != m[3] {
			return Subscription{}, fmt.Errorf("zkcoord: bad wildcard subscription %q: want *<streams>*<regex> or !<streams>!<regex>", v)
		}
		n, err := strconv.Atoi(m[2])
		if err != nil {
			return Subscription{}, fmt.Errorf("zkcoord: bad wildcard subscription %q: %v", v, err)
		}
		s := Subscription{Pattern: m[4], Blacklist: m[1] == blacklistMarker, Streams: n}
		if err := s.Validate(); err != nil {
			return Subscription{}, err
		}
		return s, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(v)))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return Subscription{}, fmt.Errorf("zkcoord: bad subscription %q: want a JSON object of topic to stream count: %v", v, err)
	}
	if dec.More() {
		return Subscription{}, fmt.Errorf("zkcoord: bad subscription %q: trailing data", v)
	}
	s := Subscription{Topics: make(map[string]int, len(raw))}
	for t, val := range raw {
		num, ok := val.(json.Number)
		if !ok {
			return Subscription{}, fmt.Errorf("zkcoord: bad subscription %q: topic %q: stream count %v is not a number", v, t, val)
		}
		n, err := strconv.ParseInt(num.String(), 10, 32)
		if err != nil {
			return Subscription{}, fmt.Errorf("zkcoord: bad subscription %q: topic %q: stream count %s is not an integer", v, t, num)
		}
		s.Topics[t] = int(n)
	}
	if err := s.Validate(); err != nil {
		return Subscription{}, fmt.Errorf("%w (in %q)", err, v)
	}
	return s, nil
}

// Matches reports whether a wildcard subscription takes topic (for a static
// one: whether topic is listed).
func (s Subscription) Matches(topic string) bool {
	if !s.IsWildcard() {
		_, ok := s.Topics[topic]
		return ok
	}
	re := s.re
	if re == nil {
		var err error
		if re, err = regexp.Compile("^(?:" + s.Pattern + ")$"); err != nil {
			return false
		}
	}
	return re.MatchString(topic) != s.Blacklist
}

// StreamsPerTopic resolves the subscription against the topics that exist
// (the children of /brokers/topics; only wildcards need them).
func (s Subscription) StreamsPerTopic(allTopics []string) map[string]int {
	if !s.IsWildcard() {
		out := make(map[string]int, len(s.Topics))
		for t, n := range s.Topics {
			out[t] = n
		}
		return out
	}
	out := make(map[string]int)
	for _, t := range allTopics {
		if s.Matches(t) {
			out[t] = s.Streams
		}
	}
	return out
}

// ThreadIDs lists, per topic, the consumer's thread ids "<consumerId>-<n>"
// for n in [0, streams) (0.7's getConsumerThreadIdsPerTopic), sorted.
func (s Subscription) ThreadIDs(consumerID string, allTopics []string) map[string][]string {
	out := make(map[string][]string)
	for t, n := range s.StreamsPerTopic(allTopics) {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = ThreadID(consumerID, i)
		}
		sort.Strings(ids)
		out[t] = ids
	}
	return out
}
