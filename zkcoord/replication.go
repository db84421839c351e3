package zkcoord

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/netdb11/kafka/broker/wire"
)

// The replication layer's registry, Kafka 0.8's layout (ZkUtils of 0.8.0).
// It lives beside 0.7's registry: a topic's node /brokers/topics/<topic>
// carries 0.8's assignment as its data, while its children stay 0.7's
// per-broker registrations, plus one child "partitions" that 0.7 readers skip.
//
//	/brokers/topics/<topic>                        persistent {"version":1,"partitions":{"0":[0,1,2]}}
//	/brokers/topics/<topic>/partitions/<p>/state   persistent {"controller_epoch":C,"leader":L,"version":1,"leader_epoch":E,"isr":[...]}
//	/controller                                    ephemeral  {"version":1,"brokerid":N,"timestamp":"<ms>"}
//	/controller_epoch                              persistent decimal
//	/admin/reassign_partitions                     persistent {"version":1,"partitions":[{"topic":T,"partition":P,"replicas":[...],"original_replicas":[...]}]}
//	/admin/preferred_replica_election              persistent {"version":1,"partitions":[{"topic":T,"partition":P}]}
//
// Every write of partition state or of the controller epoch is conditional on
// the version read before it (ZooKeeper's compare-and-set), so that a
// deposed controller or leader cannot overwrite its successor's decision.
const (
	// ControllerPath is the ephemeral node of the elected controller.
	ControllerPath = "/controller"
	// ControllerEpochPath counts controller elections.
	ControllerEpochPath = "/controller_epoch"
	// ReassignPartitionsPath holds a pending partition reassignment.
	ReassignPartitionsPath = "/admin/reassign_partitions"
	// PreferredReplicaElectionPath holds a pending preferred-leader election.
	PreferredReplicaElectionPath = "/admin/preferred_replica_election"
	// partitionsChild is the child of a topic node that holds partition states.
	partitionsChild = "partitions"
)

// NoLeader is the leader of a partition none of whose replicas can lead.
const NoLeader wire.BrokerID = -1

// PartitionsPath is /brokers/topics/<topic>/partitions.
func PartitionsPath(topic string) string { return TopicPath(topic) + "/" + partitionsChild }

// PartitionStatePath is /brokers/topics/<topic>/partitions/<p>/state.
func PartitionStatePath(topic string, partition wire.Partition) string {
	return PartitionsPath(topic) + "/" + strconv.FormatInt(int64(partition), 10) + "/state"
}

// Assignment is a topic's replica assignment: for each partition its replicas,
// the first being the preferred leader.
type Assignment map[wire.Partition][]wire.BrokerID

type assignmentJSON struct {
	Version    int                        `json:"version"`
	Partitions map[string][]wire.BrokerID `json:"partitions"`
}

// MarshalJSON writes 0.8's {"version":1,"partitions":{"0":[0,1,2]}}.
func (a Assignment) MarshalJSON() ([]byte, error) {
	v := assignmentJSON{Version: 1, Partitions: make(map[string][]wire.BrokerID, len(a))}
	for p, rs := range a {
		v.Partitions[strconv.FormatInt(int64(p), 10)] = rs
	}
	return json.Marshal(v)
}

// ParseAssignment parses the data of /brokers/topics/<topic>.
func ParseAssignment(data []byte) (Assignment, error) {
	var v assignmentJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("zkcoord: bad topic assignment %q: %w", data, err)
	}
	if v.Version != 1 {
		return nil, fmt.Errorf("zkcoord: bad topic assignment %q: version %d, want 1", data, v.Version)
	}
	a := make(Assignment, len(v.Partitions))
	for k, rs := range v.Partitions {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("zkcoord: bad topic assignment %q: partition %q", data, k)
		}
		if len(rs) == 0 {
			return nil, fmt.Errorf("zkcoord: bad topic assignment %q: partition %d has no replicas", data, p)
		}
		a[wire.Partition(p)] = rs
	}
	return a, nil
}

// Partitions returns the assignment's partition numbers in order.
func (a Assignment) Partitions() []wire.Partition {
	out := make([]wire.Partition, 0, len(a))
	for p := range a {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// PartitionState is the leader and ISR of a partition, the value of
// /brokers/topics/<topic>/partitions/<p>/state.
type PartitionState struct {
	// ControllerEpoch is the epoch of the controller that wrote the leader.
	ControllerEpoch int32 `json:"controller_epoch"`
	// Leader is the leading broker, or NoLeader.
	Leader wire.BrokerID `json:"leader"`
	// Version is 1.
	Version int `json:"version"`
	// LeaderEpoch grows by one with every new leader.
	LeaderEpoch int32 `json:"leader_epoch"`
	// ISR is the in-sync replica set, leader first when it leads.
	ISR []wire.BrokerID `json:"isr"`
}

// Marshal encodes the state as 0.8 writes it.
func (s PartitionState) Marshal() []byte {
	s.Version = 1
	if s.ISR == nil {
		s.ISR = []wire.BrokerID{}
	}
	b, _ := json.Marshal(s) // a struct of numbers cannot fail
	return b
}

// ParsePartitionState parses a partition's state node.
func ParsePartitionState(data []byte) (PartitionState, error) {
	var s PartitionState
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("zkcoord: bad partition state %q: %w", data, err)
	}
	if s.Version != 1 {
		return s, fmt.Errorf("zkcoord: bad partition state %q: version %d, want 1", data, s.Version)
	}
	return s, nil
}

// Reassignment is one entry of /admin/reassign_partitions.
type Reassignment struct {
	Topic     string          `json:"topic"`
	Partition wire.Partition  `json:"partition"`
	Replicas  []wire.BrokerID `json:"replicas"`
	// Original is the partition's assignment before the reassignment began,
	// recorded by kafka-reassign-partitions --execute so that --cancel can
	// restore it (Kafka 2.5 keeps it in the topic's node instead); empty
	// when unknown. The controller carries it along when it rewrites the
	// node.
	Original []wire.BrokerID `json:"original_replicas,omitempty"`
}

type reassignJSON struct {
	Version    int            `json:"version"`
	Partitions []Reassignment `json:"partitions"`
}

type electionJSON struct {
	Version    int                   `json:"version"`
	Partitions []wire.TopicPartition `json:"partitions"`
}

// MarshalReassignments encodes the value of /admin/reassign_partitions.
func MarshalReassignments(rs []Reassignment) []byte {
	b, _ := json.Marshal(reassignJSON{Version: 1, Partitions: rs})
	return b
}

// ParseReassignments parses the value of /admin/reassign_partitions.
func ParseReassignments(data []byte) ([]Reassignment, error) {
	var v reassignJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("zkcoord: bad reassignment %q: %w", data, err)
	}
	return v.Partitions, nil
}

// MarshalElection encodes the value of /admin/preferred_replica_election.
func MarshalElection(ps []wire.TopicPartition) []byte {
	b, _ := json.Marshal(electionJSON{Version: 1, Partitions: ps})
	return b
}

// ParseElection parses the value of /admin/preferred_replica_election.
func ParseElection(data []byte) ([]wire.TopicPartition, error) {
	var v electionJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("zkcoord: bad preferred replica election %q: %w", data, err)
	}
	return v.Partitions, nil
}

// LogEnd is one replicated log of a broker as it was when the broker
// registered: where it ends, and whether it was recovered after a crash
// (broker/log's Log.Recovered), having perhaps lost what it had not
// fsynced. The controller reads them when no member of a partition's ISR
// is known to hold everything the ISR acknowledged (Controller.partition).
type LogEnd struct {
	Topic     string         `json:"topic"`
	Partition wire.Partition `json:"partition"`
	// End is the log's end offset (its written end: a byte position).
	End int64 `json:"end"`
	// Recovered: the broker crashed since it last closed this log cleanly.
	Recovered bool `json:"recovered"`
}

type logEndsJSON struct {
	Version int      `json:"version"`
	Logs    []LogEnd `json:"logs"`
}

// MarshalLogEnds encodes the value of /brokers/logends/<id>.
func MarshalLogEnds(ends []LogEnd) []byte {
	if ends == nil {
		ends = []LogEnd{}
	}
	b, _ := json.Marshal(logEndsJSON{Version: 1, Logs: ends})
	return b
}

// ParseLogEnds parses the value of /brokers/logends/<id>.
func ParseLogEnds(data []byte) (map[wire.TopicPartition]LogEnd, error) {
	var v logEndsJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("zkcoord: bad log ends %q: %w", data, err)
	}
	if v.Version != 1 {
		return nil, fmt.Errorf("zkcoord: bad log ends %q: version %d, want 1", data, v.Version)
	}
	out := make(map[wire.TopicPartition]LogEnd, len(v.Logs))
	for _, e := range v.Logs {
		out[wire.TopicPartition{Topic: e.Topic, Partition: e.Partition}] = e
	}
	return out, nil
}

// Replication is the replication layer's state on a session (0.8's
// ZkUtils for topics and partitions): assignments, each partition's leader
// and ISR written with conditional writes, and the brokers' epochs. The
// controller and the layer use it on the broker's session; kafka-topics and
// the tools on their own. Make one with ReplicationOn.
type Replication struct {
	s *Conn
	// guards are the conditions of its writes of partition states and
	// assignments (Fenced, SeenRegistrations).
	guards []guard
}

// ReplicationOn returns the replication state role on session s.
func ReplicationOn(s *Conn) Replication { return Replication{s: s} }

// Fenced returns r whose writes of partition states and assignments are
// made only while /controller_epoch is still at version, in one ZooKeeper
// transaction with a check of it, and fail with ErrFenced once it moved: a
// controller's, with the version its IncrementEpoch left, so that a
// controller that lost the role to a newer one writes nothing more.
//
// Deviation: 0.8's controller wrote with the state's version alone, and a
// controller that had lost its session could still write, in its next
// session, states no controller then sent (make faults' split seed 1, 3
// December: a resigning controller dropped a follower from an ISR in a new
// epoch the leader never heard of, and the follower, refusing the older
// order, never followed again). Kafka 2.x checks the controller epoch's
// version in a multi the same way (KAFKA-6082).
func (r Replication) Fenced(version int32) Replication {
	return r.guarded(guard{Path: ControllerEpochPath, Version: version, Err: ErrFenced})
}

// Registrations returns the version of /brokers/ids's data, which every
// broker's registration moves (RegisterBroker creates /brokers/ids/<id> and
// sets /brokers/ids in one transaction). Read it before the brokers and
// their epochs, then write with SeenRegistrations.
func (r Replication) Registrations() (int32, error) {
	_, version, err := r.s.GetVersion(BrokerIDsPath)
	if errors.Is(err, ErrNoNode) {
		if err := r.s.EnsurePath(BrokerIDsPath); err != nil {
			return 0, err
		}
		_, version, err = r.s.GetVersion(BrokerIDsPath)
	}
	return version, err
}

// SeenRegistrations returns r whose writes of partition states and
// assignments are made only while /brokers/ids is still at version (what
// Registrations returned), in the same transaction as the write: once a
// broker has registered since, they fail with ErrRegistered and write
// nothing. A controller that read the brokers' epochs (BrokerEpochs) after
// version so writes only what it decided knowing every registration older
// than its write: a broker whose epoch is larger than a state's zxid
// registered after the decision, and a broker comparing the two (KIP-380's
// check, here on zxids) may trust the comparison.
//
// Deviation: 0.8 has no such guard, and its registration is one create.
// The soak's compound seed 49 (4 December, pass 10) lost 880 acknowledged
// writes without it: broker 3, leader of faults-2, lost power and
// registered again 14 ms before a new controller, working from the
// brokers' epochs it had read before, wrote faults-2's next state keeping
// 3 as its leader; the state, written after the new registration, made the
// restart look seen, so 3 led with its cut log and broker 2 truncated
// 1,157,087 bytes to it.
func (r Replication) SeenRegistrations(version int32) Replication {
	return r.guarded(guard{Path: BrokerIDsPath, Version: version, Err: ErrRegistered})
}

// guarded returns r with g among its guards, replacing one on the same
// path.
func (r Replication) guarded(g guard) Replication {
	guards := make([]guard, 0, len(r.guards)+1)
	for _, old := range r.guards {
		if old.Path != g.Path {
			guards = append(guards, old)
		}
	}
	r.guards = append(guards, g)
	return r
}

// CreateTopic writes a new topic's assignment to /brokers/topics/<topic>.
// The node may exist without data (a 0.7 broker registered the topic); a
// topic that already has an assignment fails with ErrNodeExists. The name
// must pass wire.ValidateTopic, the rule every broker applies before it
// stores a partition, so that no topic is created that no broker can hold.
func (r Replication) CreateTopic(topic string, a Assignment) error {
	c := r.s
	if err := wire.ValidateTopic(topic); err != nil {
		return fmt.Errorf("zkcoord: %w", err)
	}
	data, err := a.MarshalJSON()
	if err != nil {
		return err
	}
	err = c.CreatePersistent(TopicPath(topic), data)
	if !errors.Is(err, ErrNodeExists) {
		return err
	}
	old, v, err := c.GetVersion(TopicPath(topic))
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(old))) != 0 {
		return fmt.Errorf("%w: topic %s has an assignment", ErrNodeExists, topic)
	}
	_, err = c.SetIfVersion(TopicPath(topic), data, v)
	return err
}

// TopicAssignment reads a topic's assignment; ok is false when the topic has
// none (it does not exist, or only 0.7 brokers registered it).
func (r Replication) TopicAssignment(topic string) (a Assignment, ok bool, err error) {
	c := r.s
	if err := ValidateName("topic", topic); err != nil {
		return nil, false, err
	}
	data, ok, err := c.GetMaybe(TopicPath(topic))
	if err != nil || !ok || len(strings.TrimSpace(string(data))) == 0 {
		return nil, false, err
	}
	a, err = ParseAssignment(data)
	return a, err == nil, err
}

// SetTopicAssignment replaces a topic's assignment (reassignment).
func (r Replication) SetTopicAssignment(topic string, a Assignment) error {
	c := r.s
	data, err := a.MarshalJSON()
	if err != nil {
		return err
	}
	if len(r.guards) > 0 {
		_, err := c.setIfVersionGuarded(r.guards, TopicPath(topic), data, -1)
		return err
	}
	return c.SetPersistent(TopicPath(topic), data)
}

// ReplicatedTopics returns the topics that have a 0.8 assignment, sorted.
func (r Replication) ReplicatedTopics() (map[string]Assignment, error) {
	c := r.s
	names, err := c.Children(BrokerTopicsPath)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make(map[string]Assignment)
	for _, t := range names {
		a, ok, err := ReplicationOn(c).TopicAssignment(t)
		if err != nil {
			c.log.Warn("ignoring bad topic assignment", "topic", t, "err", err)
			continue
		}
		if ok {
			out[t] = a
		}
	}
	return out, nil
}

// PartitionStateOf reads a partition's state and its version; ok is false
// when it has none yet.
func (r Replication) PartitionStateOf(topic string, partition wire.Partition) (s PartitionState, version int32, ok bool, err error) {
	s, version, _, ok, err = r.PartitionStateWritten(topic, partition)
	return s, version, ok, err
}

// PartitionStateWritten is PartitionStateOf that also returns the zxid of
// the state's last write, read with it: a broker whose epoch
// (BrokerEpoch) is larger registered after the state was written.
func (r Replication) PartitionStateWritten(topic string, partition wire.Partition) (s PartitionState, version int32, written int64, ok bool, err error) {
	data, version, written, err := r.s.GetWritten(PartitionStatePath(topic, partition))
	if errors.Is(err, ErrNoNode) {
		return s, -1, -1, false, nil
	}
	if err != nil {
		return s, -1, -1, false, err
	}
	s, err = ParsePartitionState(data)
	return s, version, written, err == nil, err
}

// WritePartitionState writes a partition's state conditionally: version -1
// creates it (failing with ErrNodeExists if it exists), any other version is
// a compare-and-set (failing with ErrBadVersion if someone wrote meanwhile).
// It returns the new version.
func (r Replication) WritePartitionState(topic string, partition wire.Partition, s PartitionState, version int32) (int32, error) {
	c := r.s
	p := PartitionStatePath(topic, partition)
	switch {
	case version < 0 && len(r.guards) > 0:
		return 0, c.createPersistentGuarded(r.guards, p, s.Marshal())
	case version < 0:
		return 0, c.CreatePersistent(p, s.Marshal())
	case len(r.guards) > 0:
		return c.setIfVersionGuarded(r.guards, p, s.Marshal(), version)
	}
	return c.SetIfVersion(p, s.Marshal(), version)
}

// BrokerEpochs returns each live broker's epoch: the zxid that created its
// registration /brokers/ids/N (KIP-380's broker epoch). A broker that
// registered again (it restarted, or its session expired) has a larger one.
func (r Replication) BrokerEpochs() (map[wire.BrokerID]int64, error) {
	c := r.s
	names, err := c.children(BrokerIDsPath, false)
	if err != nil {
		return nil, err
	}
	out := make(map[wire.BrokerID]int64, len(names))
	for _, n := range names {
		id, err := ParseBrokerID(n)
		if err != nil {
			continue
		}
		epoch, ok, err := r.BrokerEpoch(id)
		if err != nil {
			return nil, err
		}
		if ok {
			out[id] = epoch
		}
	}
	return out, nil
}

// LogEnds returns the log ends broker id wrote before its current
// registration (BrokerLogEndsPath); ok is false when it wrote none (a
// broker without the replication layer, or of an older version).
func (r Replication) LogEnds(id wire.BrokerID) (ends map[wire.TopicPartition]LogEnd, ok bool, err error) {
	data, ok, err := r.s.GetMaybe(BrokerLogEndsPath(id))
	if err != nil || !ok {
		return nil, false, err
	}
	ends, err = ParseLogEnds(data)
	if err != nil {
		return nil, false, err
	}
	return ends, true, nil
}

// BrokerEpoch returns broker id's epoch, the zxid that created its
// registration /brokers/ids/<id> (see BrokerEpochs); ok is false when it
// is not registered.
func (r Replication) BrokerEpoch(id wire.BrokerID) (epoch int64, ok bool, err error) {
	c := r.s
	full, err := c.full(BrokerPath(id))
	if err != nil {
		return 0, false, err
	}
	ok, stat, err := c.zk.Exists(full)
	if err != nil {
		return 0, false, c.wrap("exists", BrokerPath(id), err)
	}
	if !ok {
		return 0, false, nil
	}
	return stat.Czxid, true, nil
}

// PartitionStateZxid returns the zxid of the last write of a partition's
// state (-1 when it has none): a broker whose epoch (BrokerEpochs) is
// larger registered after the state was written, so the leadership and
// ISR membership the state gives it predate its restart.
func (r Replication) PartitionStateZxid(topic string, partition wire.Partition) (int64, error) {
	c := r.s
	p := PartitionStatePath(topic, partition)
	full, err := c.full(p)
	if err != nil {
		return 0, err
	}
	ok, stat, err := c.zk.Exists(full)
	if err != nil {
		return 0, c.wrap("exists", p, err)
	}
	if !ok {
		return -1, nil
	}
	return stat.Mzxid, nil
}
