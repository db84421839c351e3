// Package check judges the history of a fault-injection trial: what the
// producers sent and learnt of each message, what the consumers read and
// where, and the hash of each replica's bytes. It is pure: no network, no
// clock; the harness (package faults) writes the history, this package reads
// it.
//
// Paper §3.3: the 2011 system guarantees at-least-once delivery from a
// broker that keeps one copy of each partition; a message not yet flushed is
// lost when the broker's machine dies, and a broker that is down makes its
// partitions unavailable. The checker makes each way a log can go wrong
// countable, so the same history format judges the 2011 broker and the
// replicated one alike.
//
// # History format
//
// A history is JSON lines, one Event each, told apart by "type":
//
//	{"type":"send","producer":1,"topic":"t","partition":0,"seq":17,"acks":-1,
//	 "outcome":"ok","start":"2026-12-01T06:40:00.1Z","end":"2026-12-01T06:40:00.2Z"}
//	{"type":"read","reader":"c1","topic":"t","partition":0,"offset":1234,
//	 "producer":1,"seq":17}
//	{"type":"read","reader":"c1","topic":"t","partition":0,"offset":1290,"raw":"e3b0..."}
//	{"type":"end","reader":"c1","topic":"t","partition":0,"offset":5000}
//	{"type":"replica","topic":"t","partition":0,"broker":2,"hw":5000,"sha256":"ab12..."}
//	{"type":"nemesis","name":"kill","target":"broker1","start":"...","end":"..."}
//	{"type":"meta","seed":42,"config":{"acks":"1"}}
//	{"type":"invalid","error":"final1 did not reach the end of t-0"}
//	{"type":"read","reader":"group-1","topic":"t","partition":0,"offset":1234,
//	 "producer":1,"seq":17,"poll":3,"wall":"...","mono":1200345678}
//	{"type":"commit","reader":"group-1","topic":"t","partition":0,"offset":1290}
//	{"type":"rebalance","reader":"group-2","target":"map[faults:[-1-0 -1-1]]"}
//	{"type":"drain","reader":"group","target":"group-1,group-2,group-3"}
//	{"type":"cut","name":"lose-tail-all","target":"broker2","broker":2,"topic":"t",
//	 "partition":0,"offset":4000,"start":"...","end":"...","everywhere":true}
//	{"type":"invariant","name":"strong-isr","topic":"t","partition":0,"broker":2,
//	 "start":"...","error":"broker 2 is in the ISR ...","sample":"{...}"}
//
// A send's outcome is "ok" (acknowledged: the broker said it has the message
// at the trial's acks level), "failed" (the broker or the client said it was
// not written) or "unknown" (no answer: a timeout, a dropped connection, or
// acks=0, where nothing ever answers). Messages are identified by (producer,
// seq); a read whose payload does not decode to one carries "raw", a hash
// of the payload. A consumer that reached the end of a partition says so
// with an "end" event. A "replica" event gives the sha256 of one replica's
// log bytes [0, hw), or, with "held" instead, that the replica ends before
// hw.
package check

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Event types.
const (
	TypeSend    = "send"
	TypeRead    = "read"
	TypeEnd     = "end"
	TypeReplica = "replica"
	TypeNemesis = "nemesis"
	TypeMeta    = "meta"
	// TypeInvalid says why the trial's outcome is unknown (Error): a final
	// read that did not finish, a cluster that never became healthy.
	TypeInvalid = "invalid"
	// TypeCut records a lost unflushed tail: the broker (Broker, Target)
	// whose copy of the partition was cut back to Offset, its flushed end,
	// by nemesis Name striking at Start (before its first kill), End when
	// the last broker it struck was dead (before any restart); Everywhere
	// when the same strike cut every in-sync replica of the partition (a
	// power loss everywhere).
	TypeCut = "cut"
	// TypeRebalance: consumer Reader's group began a rebalance (Target
	// "begun"), rebalanced (Target: what it owns since), or Reader left it
	// (Target "left"). Its polls after it may start anywhere its group
	// committed.
	TypeRebalance = "rebalance"
	// TypeCommit: consumer Reader committed at least Offset (the offset
	// after the last message it had polled) for the partition; Error when
	// the commit failed.
	TypeCommit = "commit"
	// TypeDrain: after the faults, the group consumers polled until they
	// had read every partition to its end (Error when they did not get
	// there in time); Target lists the group's members, comma-separated.
	// Only a history with one is checked for unseen.
	TypeDrain = "drain"
)

// Outcomes of a send.
const (
	OK      = "ok"
	Failed  = "failed"
	Unknown = "unknown"
)

// Event is one line of a history. Which fields matter depends on Type.
type Event struct {
	Type string `json:"type"`

	// Send and read: the message's identity and where it went.
	Producer  int    `json:"producer,omitempty"`
	Seq       int64  `json:"seq,omitempty"`
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`

	// Send.
	Acks    int16     `json:"acks,omitempty"`
	Outcome string    `json:"outcome,omitempty"`
	Start   time.Time `json:"start,omitzero"`
	End     time.Time `json:"end,omitzero"`
	Error   string    `json:"error,omitempty"`
	// At is where the broker said it appended the message (the offset of
	// the first message of the request, plus the sizes of those before
	// it): known for acknowledged replicated sends.
	At *int64 `json:"at,omitempty"`
	// Refused: the leader answered NotEnoughReplicas to every attempt of
	// the send, which promises that it appended none of its messages.
	Refused bool `json:"refused,omitempty"`
	// Attempts is how many times a client that retries (the producer
	// library) sent the message: above 1, a second copy in the log is the
	// retry's (at least once), still counted as a duplicate.
	Attempts int `json:"attempts,omitempty"`
	// Conn numbers the connection a wire producer sent the message on
	// (from 1, per producer; a new one only after the last was dropped);
	// 0 for a client that keeps its own connections (the producer
	// library).
	Conn int `json:"conn,omitempty"`

	// Read and end: the reader and the byte offset of the message (read) or
	// the end it reached (end).
	Reader string `json:"reader,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	// Raw is a hash of a payload that does not name a (producer, seq).
	Raw string `json:"raw,omitempty"`
	// Poll numbers a consumer's polls (from 1, in the order it got its
	// messages): a read with Poll is a consumer's, checked for poll-skip
	// and nonmonotonic-poll; the harness's own readers have none.
	Poll int `json:"poll,omitempty"`

	// Wall and Mono are when the harness recorded the event: wall-clock
	// time, and monotonic nanoseconds since the trial's start (a send: its
	// acknowledgement's; StartMono its start's).
	Wall      time.Time `json:"wall,omitzero"`
	Mono      int64     `json:"mono,omitempty"`
	StartMono int64     `json:"start_mono,omitempty"`

	// Replica: the broker holding it, its high watermark and the sha256 of
	// its log bytes below it.
	Broker int32  `json:"broker,omitempty"`
	HW     int64  `json:"hw,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Held, with no SHA256, says the replica holds only this many bytes,
	// fewer than HW: it ends short of what the readers read.
	Held int64 `json:"held,omitempty"`

	// Nemesis: what was done to what, between Start and End.
	Name   string `json:"name,omitempty"`
	Target string `json:"target,omitempty"`
	// Cut: the strike cut every replica of the partition that was in its
	// ISR (a power loss of every machine that holds what was acknowledged).
	Everywhere bool `json:"everywhere,omitempty"`
	// Invariant: the sample that shows it broken (PartitionSample, JSON).
	Sample string `json:"sample,omitempty"`
	// Invariant: ZooKeeper's state of the partition was written before
	// the process that breaks it registered (or it had not registered
	// yet), so no controller had acted on its restart (Monitor).
	Unacted bool `json:"unacted,omitempty"`

	// Meta: the trial's seed and configuration.
	Seed   int64             `json:"seed,omitempty"`
	Config map[string]string `json:"config,omitempty"`
}

// ID is a message's identity.
type ID struct {
	Producer int
	Seq      int64
}

func (id ID) String() string { return fmt.Sprintf("p%d/s%d", id.Producer, id.Seq) }

// TP is a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

func (tp TP) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Writer appends events to a history as JSON lines. It is not safe for
// concurrent use; the harness serialises its events through one goroutine
// or a lock.
type Writer struct {
	enc *json.Encoder
}

// NewWriter returns a Writer onto w.
func NewWriter(w io.Writer) *Writer { return &Writer{enc: json.NewEncoder(w)} }

// Write appends one event.
func (w *Writer) Write(e Event) error { return w.enc.Encode(&e) }

// Read parses a whole history. A line that is not an event is an error
// naming its line number; nothing is skipped silently.
func Read(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var evs []Event
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("check: history line %d: %w", line, err)
		}
		switch e.Type {
		case TypeSend, TypeRead, TypeEnd, TypeReplica, TypeNemesis, TypeMeta, TypeInvalid, TypeCut,
			TypeRebalance, TypeCommit, TypeDrain, TypeInvariant:
		default:
			return nil, fmt.Errorf("check: history line %d: unknown event type %q", line, e.Type)
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("check: history line %d: %w", line+1, err)
	}
	return evs, nil
}
