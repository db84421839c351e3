package wire

import (
	"errors"
	"fmt"
)

// MaxTopicLen is the longest topic name Kafka accepts (249 since Kafka
// 0.10, KAFKA-3219): a partition's directory is "<topic>-<partition>", and
// the name, '-' and a partition number of up to 5 digits must fit the file
// system's 255-byte limit on a file name. It is one rule for both kinds of
// topic, 0.7's and the replicated ones.
//
// Deviation: Kafka 0.7 had no limit of its own (a topic whose directory
// name did not fit failed at creation); a 0.7 PRODUCE to a topic of 250 to
// 255 characters is now refused before anything touches the disk.
const MaxTopicLen = 249

// ErrInvalidTopic means a topic name breaks Kafka's rule: 1 to 249
// characters of [a-zA-Z0-9._-], and neither "." nor "..". A broker refuses
// such a name before anything touches the disk, so no name can escape
// log.dir; a client refuses it before sending. It has no wire code of its
// own (CodeOf maps it to CodeUnknown).
var ErrInvalidTopic = errors.New("kafka: invalid topic name")

// ValidateTopic checks a topic name against Kafka's rule: 1 to 249
// characters, each a letter, a digit, '.', '_' or '-', and neither "." nor
// "..". The error wraps ErrInvalidTopic and quotes the name. Because '/' and
// NUL are refused, a valid name never leaves a directory it is joined to.
func ValidateTopic(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidTopic)
	case len(name) > MaxTopicLen:
		return fmt.Errorf("%w: %d characters, more than %d", ErrInvalidTopic, len(name), MaxTopicLen)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q has %q at byte %d (allowed: [a-zA-Z0-9._-])", ErrInvalidTopic, name, c, i)
		}
	}
	return nil
}
