package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netdb11/kafka/broker/cli"
	"github.com/netdb11/kafka/broker/props"
	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer/group"
	"github.com/netdb11/kafka/producer"
	"github.com/netdb11/kafka/zkcoord"
	"github.com/spf13/pflag"
)

var command = cli.Command{
	Name: "kafka-mirror",
	Usage: "Usage: kafka-mirror --source-zookeeper=HOST:PORT[/chroot] ... (--target-zookeeper=Z | --target-broker-list=L)\n" +
		"                    (--whitelist=REGEX | --blacklist=REGEX) [--num-streams=N]\n\n" +
		"Copies the selected topics of each source cluster to the target cluster (0.7's MirrorMaker),\n" +
		"committing a source offset only once the target has the message: at-least-once across the\n" +
		"mirror. Stops cleanly on SIGTERM; prints progress and lag every --progress-interval.\n",
	Setup: func(fs *pflag.FlagSet) cli.RunFunc {
		c := config{NumStreams: 1, Progress: 10 * time.Second}
		// 0.7.2's MirrorMaker spelled them --consumer.config,
		// --producer.config and --num.streams: accept both.
		fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
			return pflag.NormalizedName(strings.ReplaceAll(name, ".", "-"))
		})
		fs.StringArrayVar(&c.Sources, "source-zookeeper", nil, "a source cluster's ZooKeeper, host:port[,host:port][/chroot] (repeatable; one group consumer each)")
		fs.StringVar(&c.TargetZK, "target-zookeeper", "", "the target cluster's ZooKeeper: the producer finds brokers and partitions there (zk.connect)")
		fs.StringVar(&c.TargetList, "target-broker-list", "", "the target's brokers, id:host:port,... (broker.list), instead of --target-zookeeper; the brokers then pick partitions")
		fs.StringVar(&c.Whitelist, "whitelist", "", "mirror the topics whose whole name matches this regular expression")
		fs.StringVar(&c.Blacklist, "blacklist", "", "mirror every topic except those whose whole name matches this regular expression")
		fs.IntVar(&c.NumStreams, "num-streams", c.NumStreams, "consumer streams per source (0.7's --num.streams), each with its own goroutine; the filter's topics' partitions are split among them")
		fs.StringVar(&c.ConsumerConfig, "consumer-config", "", "0.7 consumer.properties for the source consumers (groupid, fetch.size, ...; zk.connect comes from --source-zookeeper)")
		fs.StringVar(&c.ProducerConfig, "producer-config", "", "0.7 producer.properties for the target producer (the mirror keeps producer.type=sync and confirm=send)")
		fs.DurationVar(&c.Progress, "progress-interval", c.Progress, "how often to print messages mirrored and lag (0: never)")
		return func(ctx context.Context, fs *pflag.FlagSet, std cli.IO) error { return c.run(ctx, std) }
	},
}

// defaultGroup is the consumer group when the consumer config names none.
const defaultGroup = "kafka-mirror"

type config struct {
	Sources        []string
	TargetZK       string
	TargetList     string
	Whitelist      string
	Blacklist      string
	NumStreams     int
	ConsumerConfig string
	ProducerConfig string
	Progress       time.Duration
}

// validate checks the flags and returns the topic filter.
func (c *config) validate() (group.TopicFilter, error) {
	var errs []error
	if len(c.Sources) == 0 {
		errs = append(errs, errors.New("--source-zookeeper is required"))
	}
	for _, s := range c.Sources {
		if _, err := zkcoord.ParseConnect(s); err != nil {
			errs = append(errs, fmt.Errorf("--source-zookeeper=%s: %w", s, err))
		}
	}
	if (c.TargetZK == "") == (c.TargetList == "") {
		errs = append(errs, errors.New("exactly one of --target-zookeeper and --target-broker-list is required"))
	}
	if (c.Whitelist == "") == (c.Blacklist == "") {
		errs = append(errs, errors.New("exactly one of --whitelist and --blacklist is required"))
	}
	if c.NumStreams < 1 {
		errs = append(errs, fmt.Errorf("--num-streams=%d: must be at least 1", c.NumStreams))
	}
	if c.Progress < 0 {
		errs = append(errs, errors.New("--progress-interval must not be negative"))
	}
	filter := group.Whitelist(c.Whitelist)
	if c.Blacklist != "" {
		filter = group.Blacklist(c.Blacklist)
	}
	if len(errs) == 0 {
		if err := filter.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return filter, &cli.UsageError{Err: err}
	}
	return filter, nil
}

// loadProps reads a 0.7 properties file into set.
func loadProps(path string, set func(k, v string) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	ps, err := props.Parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, p := range ps {
		if err := set(p.Key, p.Value); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// consumerConfig is the source consumers' configuration, zk.connect aside.
func (c *config) consumerConfig(log *slog.Logger) (group.Config, error) {
	cc := group.DefaultConfig()
	cc.GroupID = defaultGroup
	if err := loadProps(c.ConsumerConfig, cc.Set); err != nil {
		return cc, err
	}
	cc.Logger = log
	return cc, nil
}

// producerConfig is the target producer's configuration.
func (c *config) producerConfig(log *slog.Logger) (producer.Config, error) {
	pc := producer.DefaultConfig()
	if err := loadProps(c.ProducerConfig, pc.Set); err != nil {
		return pc, err
	}
	if pc.Type != producer.Sync || (pc.Confirm != "" && pc.Confirm != producer.ConfirmSend) {
		return pc, fmt.Errorf("%s: kafka-mirror needs producer.type=sync and confirm=send, so that it commits a source offset only once the target has the message", c.ProducerConfig)
	}
	pc.Confirm = producer.ConfirmSend
	pc.ZkConnect, pc.BrokerList = c.TargetZK, c.TargetList
	pc.Partitioner = producer.PartitionerFunc(preservePartition)
	pc.Logger = log
	return pc, nil
}

// The key of a mirrored message carries the index of its source partition
// in the source topic's sorted partition list and that list's length.
const keyLen = 8

func partitionKey(index, count int) []byte {
	k := make([]byte, keyLen)
	binary.BigEndian.PutUint32(k, uint32(index))
	binary.BigEndian.PutUint32(k[4:], uint32(count))
	return k
}

// preservePartition sends a message to the target partition of the same
// index as its source partition when the target topic has as many
// partitions as the source, and to a random one otherwise, as 0.7's
// MirrorMaker always did (it sent unkeyed messages, so its producer picked
// a random partition). With --target-broker-list the brokers pick, and the
// key is not used.
//
// Deviation: 0.7's MirrorMaker let the target's producer pick a random
// partition; keeping the index keeps per-partition order and locality
// across the mirror where the topics' shapes allow it.
func preservePartition(key []byte, n int) int {
	if len(key) == keyLen {
		if i, c := int(binary.BigEndian.Uint32(key)), int(binary.BigEndian.Uint32(key[4:])); c == n && i < n {
			return i
		}
	}
	return rand.IntN(n)
}

// stats counts what the mirror did, for the progress lines.
type stats struct {
	mirrored atomic.Int64
	keyed    atomic.Int64 // of those, sent with their source partition's index as key
	batches  atomic.Int64 // confirmed batches (sends of up to batch.size messages)
	retries  atomic.Int64
}

func (c *config) run(ctx context.Context, std cli.IO) error {
	filter, err := c.validate()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(std.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cc, err := c.consumerConfig(log)
	if err != nil {
		return err
	}
	pc, err := c.producerConfig(log)
	if err != nil {
		return err
	}
	p, err := producer.New(pc)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := p.Close(); cerr != nil {
			fmt.Fprintf(std.Stderr, "kafka-mirror: closing the producer: %v\n", cerr)
		}
	}()
	st := &stats{}
	var wg sync.WaitGroup
	errc := make(chan error, len(c.Sources))
	srcs := make([]*source, len(c.Sources))
	for i, zk := range c.Sources {
		scc := cc
		scc.ZkConnect = zk
		srcs[i] = &source{zk: zk, cfg: scc, filter: filter, streams: c.NumStreams, p: p, st: st, batch: pc.BatchSize, log: log.With("source", zk)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srcs[i].run(ctx); err != nil {
				errc <- fmt.Errorf("source %s: %w", zk, err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var tick <-chan time.Time
	if c.Progress > 0 {
		t := time.NewTicker(c.Progress)
		defer t.Stop()
		tick = t.C
	}
	start, last, lastN := time.Now(), time.Now(), int64(0)
	var firstErr error
	for {
		select {
		case <-done:
			c.printProgress(std.Stdout, srcs, st, start, &last, &lastN)
			fmt.Fprintf(std.Stdout, "kafka-mirror: stopped after mirroring %d messages\n", st.mirrored.Load())
			return firstErr
		case err := <-errc:
			if firstErr == nil {
				firstErr = err
			}
		case <-tick:
			c.printProgress(std.Stdout, srcs, st, start, &last, &lastN)
		}
	}
}

// printProgress prints one line per source: messages mirrored, the rate
// since the last line, and the group's lag (log end minus committed offset).
func (c *config) printProgress(w io.Writer, srcs []*source, st *stats, start time.Time, last *time.Time, lastN *int64) {
	now, n := time.Now(), st.mirrored.Load()
	rate := float64(n-*lastN) / now.Sub(*last).Seconds()
	*last, *lastN = now, n
	fmt.Fprintf(w, "progress elapsed=%.1fs mirrored=%d rate=%.0f/s batches=%d keyed=%d retries=%d\n",
		now.Sub(start).Seconds(), n, rate, st.batches.Load(), st.keyed.Load(), st.retries.Load())
	for _, s := range srcs {
		topics := s.currentTopics()
		if len(topics) == 0 {
			fmt.Fprintf(w, "lag source=%s topics=0\n", s.zk)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		parts, _, err := group.Status(ctx, s.cfg, topics)
		cancel()
		if err != nil {
			fmt.Fprintf(w, "lag source=%s error=%q\n", s.zk, err.Error())
			continue
		}
		var lag int64
		unknown := 0
		for _, ps := range parts {
			if l, ok := ps.Lag(); ok {
				lag += l
			} else {
				unknown++
			}
		}
		fmt.Fprintf(w, "lag source=%s topics=%d partitions=%d lag_bytes=%d unknown=%d\n", s.zk, len(topics), len(parts), lag, unknown)
	}
}

// source mirrors one source cluster: a group consumer with a wildcard
// subscription (0.7's createMessageStreamsByFilter), which picks up topics
// the filter allows as they appear.
type source struct {
	zk      string
	cfg     group.Config
	filter  group.TopicFilter
	streams int
	p       *producer.Producer
	st      *stats
	log     *slog.Logger
	batch   int // the most messages a stream sends at once (batch.size)

	abandoned atomic.Bool // a stream stopped with a batch unconfirmed: commit no more

	mu    sync.Mutex
	conn  *zkcoord.Conn                     // the source's registry; guarded by mu
	parts map[string][]wire.BrokerPartition // sorted source partitions per topic, as the producer sorts the target's; guarded by mu
}

// currentTopics lists the source's topics the filter allows.
func (s *source) currentTopics() []string {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return nil
	}
	all, err := zkcoord.RegistryOn(conn).Topics(false)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range all {
		if s.filter.Allows(t) {
			out = append(out, t)
		}
	}
	return out
}

// partitions returns the topic's sorted source partitions, read again from
// the registry when refresh is set or the topic is new.
func (s *source) partitions(topic string, refresh bool) []wire.BrokerPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bps, ok := s.parts[topic]; ok && !refresh {
		return bps
	}
	if s.conn == nil {
		return nil
	}
	names, err := zkcoord.RegistryOn(s.conn).PartitionNames(topic, false)
	if err != nil {
		s.log.Warn("reading the source's partitions failed", "topic", topic, "err", err)
		return s.parts[topic]
	}
	bps := make([]wire.BrokerPartition, 0, len(names))
	for _, n := range names {
		if bp, err := zkcoord.ParseBrokerPartition(n); err == nil {
			bps = append(bps, bp)
		}
	}
	slices.SortFunc(bps, wire.BrokerPartition.Compare)
	s.parts[topic] = bps
	return bps
}

// run mirrors until ctx ends, then stops cleanly: every stream finishes the
// message it is sending, the sent ones are committed, and the consumer
// leaves the group.
func (s *source) run(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, s.cfg.ZkSessionTimeout+s.cfg.ZkConnectionTimeout+30*time.Second)
	defer cancel()
	conn, err := zkcoord.Dial(dctx, zkcoord.Config{Connect: s.zk, SessionTimeout: s.cfg.ZkSessionTimeout, Logger: s.log})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer conn.Close()
	s.mu.Lock()
	s.conn, s.parts = conn, map[string][]wire.BrokerPartition{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.conn = nil
		s.mu.Unlock()
	}()
	cfg := s.cfg
	// The mirror commits itself, and only what the target has: a batch is
	// marked consumed (Ack, with ManualAck) once the target confirmed it,
	// so no commit, the mirror's or a rebalance's, covers a batch in flight.
	interval := cfg.AutoCommitInterval
	cfg.AutoCommit, cfg.ManualAck = false, true
	gc, err := group.NewByFilter(dctx, cfg, s.filter, s.streams)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	s.log.Info("mirroring", "filter", s.filter.String(), "streams", s.streams)
	mctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for _, st := range gc.FilterStreams() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.copyStream(mctx, st)
		}()
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
loop:
	for {
		select {
		case <-mctx.Done():
			break loop
		case <-tick.C:
			if err := s.commit(gc); err != nil {
				s.log.Warn("commit failed", "err", err)
			}
		}
	}
	stop()
	wg.Wait()
	err = s.commit(gc)
	return errors.Join(err, gc.Close())
}

// copyStream mirrors st in batches: it waits for a message, gathers the
// ones already fetched behind it (up to batch.size of the producer config,
// default 200; no linger: while a batch is being confirmed the next one
// piles up in the stream), sends them with one confirmed request per
// target broker and topic (the sync producer's Send of several messages,
// confirm=send), and only then acknowledges the batch.
//
// The group consumer reads with ManualAck: reading a message with Next
// marks nothing, and the Ack after the target's confirmation marks the
// whole batch, so that no commit covers a message the target may lack.
//
// Deviation: 0.7's MirrorMaker sent through an async producer while its
// consumer auto-committed what the iterators had returned, so a crash could
// commit messages still queued in the producer; here a batch is confirmed
// (sync, confirm=send) before it is acknowledged, and the mirror commits
// itself; with group.Config.ManualAck the group consumer's own commit
// before releasing partitions in a rebalance covers only acknowledged
// batches, so a rebalance while a batch is in flight leaves it to the next
// owner, which sends it again (duplicates, never a gap).
//
// On a failed send it retries until it succeeds or the mirror stops; a
// batch abandoned on stop marks the source unclean (s.abandoned), and no
// commit happens after it: the next run sends the batch again.
func (s *source) copyStream(ctx context.Context, st *group.Stream) {
	// A done context makes Next return only what is already fetched.
	now, cancel := context.WithCancel(context.Background())
	cancel()
	batch := make([]group.Message, 0, s.batch)
	for {
		m, err := st.Next(ctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, group.ErrClosed) {
				s.log.Warn("reading the source failed", "thread", st.ThreadID(), "err", err)
			}
			return
		}
		batch = append(batch[:0], m)
		var readErr error
		for len(batch) < s.batch {
			m, err := st.Next(now)
			if err != nil {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, group.ErrTimeout) {
					readErr = err // the batch in hand goes first
				}
				break
			}
			batch = append(batch, m)
		}
		if !s.sendBatch(ctx, batch) {
			s.abandoned.Store(true)
			return
		}
		st.Ack()
		s.st.mirrored.Add(int64(len(batch)))
		s.st.batches.Add(1)
		if readErr != nil {
			if !errors.Is(readErr, group.ErrClosed) {
				s.log.Warn("reading the source failed", "thread", st.ThreadID(), "err", readErr)
			}
			return
		}
	}
}

// sendBatch sends batch to the target, one Send per topic (in the order of
// first appearance, each topic's messages in their order), each retried
// until the target confirms it. It reports false when the mirror stopped
// before every topic's messages were confirmed. A Send that fails on one
// target broker and succeeds on another is sent again whole: those
// messages arrive twice (at-least-once).
func (s *source) sendBatch(ctx context.Context, batch []group.Message) bool {
	var topics []string
	byTopic := map[string][]producer.Message{}
	keyed := 0
	for _, m := range batch {
		key := s.key(m.Topic, m.Partition)
		if key != nil {
			keyed++
		}
		if _, ok := byTopic[m.Topic]; !ok {
			topics = append(topics, m.Topic)
		}
		byTopic[m.Topic] = append(byTopic[m.Topic], producer.Message{Key: key, Value: m.Payload})
	}
	for _, topic := range topics {
		msgs := byTopic[topic]
		for attempt := 0; ; attempt++ {
			// The send is not cut short by a stop: a batch being sent
			// finishes, so that a clean stop commits it.
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := s.p.Send(sctx, topic, msgs...)
			cancel()
			if err == nil {
				break
			}
			s.st.retries.Add(1)
			s.log.Warn("sending to the target failed; retrying", "topic", topic, "messages", len(msgs), "attempt", attempt+1, "err", err)
			select {
			case <-ctx.Done():
				return false // not acknowledged: the next run sends it again
			case <-time.After(time.Second):
			}
		}
	}
	s.st.keyed.Add(int64(keyed))
	return true
}

// commit writes the group's acknowledged offsets (see copyStream), and not
// at all after a stream abandoned a batch
// (then the offsets of the last commit stand, and the next run sends
// everything after them again, as a send per message did).
func (s *source) commit(gc *group.Consumer) error {
	if s.abandoned.Load() {
		s.log.Warn("not committing: a batch was not confirmed by the target before the stop; the next run sends it again")
		return nil
	}
	return gc.Commit()
}

// key returns the partition key of a message from the named source
// partition, or nil when the source's partition list does not hold it.
func (s *source) key(topic string, bp wire.BrokerPartition) []byte {
	bps := s.partitions(topic, false)
	i, ok := slices.BinarySearchFunc(bps, bp, wire.BrokerPartition.Compare)
	if !ok {
		// A partition added since: read the list again.
		bps = s.partitions(topic, true)
		if i, ok = slices.BinarySearchFunc(bps, bp, wire.BrokerPartition.Compare); !ok {
			return nil
		}
	}
	return partitionKey(i, len(bps))
}
