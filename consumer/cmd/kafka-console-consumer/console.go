package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/netdb11/kafka/broker/wire"
	"github.com/netdb11/kafka/consumer"
	"github.com/spf13/pflag"
)

// config is what the flags set.
type config struct {
	Zookeeper     string
	Group         string
	BrokerList    string
	Topic         string
	Whitelist     string
	Blacklist     string
	Partition     int32
	brokers       []wire.Broker // --broker-list, parsed
	FromBeginning bool
	Offset        int64
	offsetSet     bool
	MaxMessages   int64
	FetchSize     int
	Backoff       time.Duration
	Timeout       time.Duration
	SocketTimeout time.Duration
}

func defaultConfig() config {
	return config{FetchSize: 1 << 20, Backoff: 100 * time.Millisecond, SocketTimeout: 30 * time.Second}
}

func (c *config) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.BrokerList, "broker-list", c.BrokerList, "brokers to read from, as id:host:port[,id:host:port...]; or use --zookeeper")
	fs.StringVar(&c.Zookeeper, "zookeeper", c.Zookeeper, "ZooKeeper connect string host:port[/chroot]: consume as a member of a consumer group (--group) instead of from --broker-list")
	fs.StringVar(&c.Group, "group", c.Group, "with --zookeeper: the consumer group (groupid) to join; empty: a throw-away group deleted at exit")
	fs.StringVar(&c.Topic, "topic", c.Topic, "topic to read; exactly one of --topic, --whitelist and --blacklist")
	fs.StringVar(&c.Whitelist, "whitelist", c.Whitelist, "with --zookeeper: read every topic whose name matches this regex, including topics created later, each of those from its first message (0.7's whitelist; ',' means '|')")
	fs.StringVar(&c.Blacklist, "blacklist", c.Blacklist, "with --zookeeper: read every topic whose name does not match this regex, including topics created later (0.7's blacklist; ',' means '|')")
	fs.Int32Var(&c.Partition, "partition", c.Partition, "partition to read on each broker")
	fs.BoolVar(&c.FromBeginning, "from-beginning", c.FromBeginning, "start at the earliest offset still held, instead of the log end")
	fs.Int64Var(&c.Offset, "offset", c.Offset, "start at this offset (a message boundary), instead of the log end")
	fs.Int64Var(&c.MaxMessages, "max-messages", c.MaxMessages, "exit after printing this many messages (0: follow the log until stopped)")
	fs.IntVar(&c.FetchSize, "fetch-size", c.FetchSize, "fetch.size: bytes asked for per fetch; a message larger than this is an error")
	fs.DurationVar(&c.Backoff, "backoff", c.Backoff, "wait this long before fetching again when there is nothing new")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "exit when no message arrives for this long (0: never; 0.7's consumer.timeout.ms)")
	fs.DurationVar(&c.SocketTimeout, "socket-timeout", c.SocketTimeout, "socket.timeout.ms: the longest one request may take")
}

func (c *config) validate() error {
	var errs []error
	if (c.BrokerList == "") == (c.Zookeeper == "") {
		errs = append(errs, errors.New("exactly one of --broker-list and --zookeeper is required"))
	}
	if c.Zookeeper != "" && (c.offsetSet || c.Partition != 0) {
		errs = append(errs, errors.New("--offset and --partition need --broker-list: a group's members split the partitions and keep their offsets in ZooKeeper"))
	}
	if c.Group != "" && c.Zookeeper == "" {
		errs = append(errs, errors.New("--group needs --zookeeper"))
	}
	switch n := btoi(c.Topic != "") + btoi(c.Whitelist != "") + btoi(c.Blacklist != ""); {
	case n != 1:
		errs = append(errs, errors.New("exactly one of --topic, --whitelist and --blacklist is required"))
	case c.Topic == "" && c.Zookeeper == "":
		errs = append(errs, errors.New("--whitelist and --blacklist need --zookeeper: topics are found in its registry"))
	case c.Topic == "":
		if err := c.filter().Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--whitelist/--blacklist: %w", err))
		}
	}
	if c.FromBeginning && c.offsetSet {
		errs = append(errs, errors.New("--from-beginning and --offset exclude each other"))
	}
	if c.offsetSet && c.Offset < 0 {
		errs = append(errs, fmt.Errorf("--offset=%d: must not be negative", c.Offset))
	}
	if c.Partition < 0 {
		errs = append(errs, fmt.Errorf("--partition=%d: must not be negative", c.Partition))
	}
	if c.MaxMessages < 0 {
		errs = append(errs, fmt.Errorf("--max-messages=%d: must not be negative", c.MaxMessages))
	}
	if c.Backoff <= 0 {
		errs = append(errs, fmt.Errorf("--backoff=%v: must be positive", c.Backoff))
	}
	return errors.Join(errs...)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// source is one broker's partition and where reading it has got to.
type source struct {
	c      *consumer.SimpleConsumer
	offset wire.Offset
	// replicated: the partition of a replicated topic, read from leader,
	// its leader when last found (with METADATA).
	replicated bool
	leader     wire.BrokerID
	// misses counts leader look-ups since the last fetch that worked;
	// checked is when the leader was last looked up.
	misses  int
	checked time.Time
}

// leaderRecheck is how often a replicated source that receives nothing
// asks whether the leader moved (a deposed leader still alive serves what
// it has, as a follower, but no longer grows).
const leaderRecheck = time.Second

// maxMisses bounds the leader look-ups in a row that bring no fetch that
// works (each --backoff apart) before the console consumer gives up.
const maxMisses = 100

// open connects to every broker of the list and finds where to start. For
// a replicated topic (issue 12: a broker of the list answers METADATA with
// the topic's assignment) it reads the partition once, from its leader,
// instead of from every broker.
func (c *config) open(ctx context.Context) ([]*source, error) {
	brokers, err := wire.ParseBrokerList(c.BrokerList)
	if err != nil {
		return nil, err
	}
	c.brokers = brokers
	var out []*source
	id, addr, err := c.findLeader(ctx)
	switch {
	case err == nil:
		sc, err := consumer.NewSimpleConsumer(addr, c.simpleConfig())
		if err != nil {
			return nil, err
		}
		s := &source{c: sc, offset: wire.Offset(c.Offset), replicated: true, leader: id}
		out = append(out, s)
		return out, c.startOffset(ctx, s)
	case !errors.Is(err, consumer.ErrNotReplicated):
		return nil, err
	}
	for _, b := range brokers {
		sc, err := consumer.NewSimpleConsumer(b.Addr(), c.simpleConfig())
		if err != nil {
			return out, err
		}
		s := &source{c: sc, offset: wire.Offset(c.Offset)}
		out = append(out, s)
		if err := c.startOffset(ctx, s); err != nil {
			return out, fmt.Errorf("broker %v: %w", b, err)
		}
	}
	return out, nil
}

func (c *config) simpleConfig() consumer.Config {
	cc := consumer.DefaultConfig()
	cc.FetchSize = c.FetchSize
	cc.SocketTimeout = c.SocketTimeout
	return cc
}

// startOffset sets where s starts, unless --offset says it.
func (c *config) startOffset(ctx context.Context, s *source) error {
	if c.offsetSet {
		return nil
	}
	at := wire.LatestTime
	if c.FromBeginning {
		at = wire.EarliestTime
	}
	offs, err := s.c.OffsetsBefore(ctx, c.Topic, wire.Partition(c.Partition), at, 1)
	if err != nil {
		return err
	}
	s.offset = 0
	if len(offs) > 0 {
		s.offset = offs[0]
	}
	return nil
}

// findLeader asks the brokers of the list, in turn, for the partition's
// leader with METADATA. It fails with consumer.ErrNotReplicated when the
// topic has no replica assignment, or when no broker answers METADATA (0.7
// brokers and the 2011 broker close the connection): the partition is then
// read from every broker of the list, as in 0.7.
func (c *config) findLeader(ctx context.Context) (wire.BrokerID, string, error) {
	var errs []error
	for _, b := range c.brokers {
		sc, err := consumer.NewSimpleConsumer(b.Addr(), c.simpleConfig())
		if err != nil {
			return -1, "", err
		}
		md, err := sc.Metadata(ctx, c.Topic)
		if cerr := sc.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return consumer.LeaderAddr(md, c.Topic, wire.Partition(c.Partition))
	}
	return -1, "", fmt.Errorf("%w: no broker answered METADATA: %w", consumer.ErrNotReplicated, errors.Join(errs...))
}

// relead finds a replicated partition's leader again after a fetch failed,
// and points s at it; s keeps its offset (byte offsets are the same on every
// replica). It returns the fetch's error after maxMisses tries in a row.
func (c *config) relead(ctx context.Context, s *source, cause error) error {
	s.misses++
	s.checked = time.Now()
	if s.misses > maxMisses {
		return fmt.Errorf("%s-%d: no leader serves offset %d after %d tries: %w", c.Topic, c.Partition, s.offset, maxMisses, cause)
	}
	id, addr, err := c.findLeader(ctx)
	if err != nil {
		return nil // no leader now: try again after --backoff
	}
	if id == s.leader && s.c.Addr() == addr {
		return nil
	}
	sc, err := consumer.NewSimpleConsumer(addr, c.simpleConfig())
	if err != nil {
		return err
	}
	old := s.c
	s.c, s.leader = sc, id
	return old.Close()
}

// run prints messages until --max-messages, --timeout, or ctx ends.
func (c *config) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	if err := c.validate(); err != nil {
		return err
	}
	if c.Zookeeper != "" {
		return c.runGroup(ctx, stdout, stderr)
	}
	sources, err := c.open(ctx)
	defer func() {
		for _, s := range sources {
			err = errors.Join(err, s.c.Close())
		}
	}()
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(stdout, 64<<10)
	printed := int64(0)
	lastMessage := time.Now()
	for {
		got := 0
		for _, s := range sources {
			n, err := c.drain(ctx, s, w, &printed)
			got += n
			if err != nil {
				if ctx.Err() != nil {
					return w.Flush() // stopped by a signal
				}
				return errors.Join(err, w.Flush())
			}
			if c.MaxMessages > 0 && printed >= c.MaxMessages {
				return w.Flush()
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if got > 0 {
			lastMessage = time.Now()
			continue
		}
		if c.Timeout > 0 && time.Since(lastMessage) >= c.Timeout {
			return nil
		}
		t := time.NewTimer(c.Backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// drain fetches once from s and prints what came, up to --max-messages.
func (c *config) drain(ctx context.Context, s *source, w *bufio.Writer, printed *int64) (int, error) {
	set, err := s.c.Fetch(ctx, c.Topic, wire.Partition(c.Partition), s.offset, c.FetchSize)
	if s.replicated && err != nil && ctx.Err() == nil && !errors.Is(err, consumer.ErrProtocol) {
		// The leader failed or moved, or has not yet got what an earlier
		// one served (OffsetOutOfRange past its end): find it again, and
		// fetch again after --backoff from the same offset.
		return 0, c.relead(ctx, s, err)
	}
	if err == nil {
		s.misses = 0
	}
	if errors.Is(err, wire.ErrOffsetOutOfRange) {
		return 0, fmt.Errorf("%w (start from --from-beginning, or an offset between the earliest and the log end)", err)
	}
	if err != nil {
		return 0, err
	}
	n := 0
	it := set.Iterator()
	for (c.MaxMessages == 0 || *printed < c.MaxMessages) && it.Next() {
		if _, err := w.Write(it.Payload()); err != nil {
			return n, err
		}
		if err := w.WriteByte('\n'); err != nil {
			return n, err
		}
		s.offset = it.NextOffset()
		*printed++
		n++
	}
	if n == 0 && s.replicated && time.Since(s.checked) >= leaderRecheck {
		s.checked = time.Now()
		if id, _, err := c.findLeader(ctx); err == nil && id != s.leader {
			return 0, c.relead(ctx, s, nil)
		}
	}
	return n, it.Err()
}
