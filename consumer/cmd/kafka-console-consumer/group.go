package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"

	"github.com/netdb11/kafka/consumer/group"
)

// groupConfig is the group consumer's configuration for --zookeeper mode.
func (c *config) groupConfig() group.Config {
	gc := group.DefaultConfig()
	gc.ZkConnect = c.Zookeeper
	gc.GroupID = c.Group
	gc.FetchSize = c.FetchSize
	gc.SocketTimeout = c.SocketTimeout
	gc.FetcherBackoff = c.Backoff
	// As 0.7's ConsoleConsumer: a group without committed offsets starts
	// at the log end unless --from-beginning. Deviation: 0.7 did it with
	// autooffset.reset=largest, which also sent a group whose committed
	// offset retention had deleted to the log end, past every message still
	// held; here such a group restarts at the earliest offset held
	// (autooffset.reset=smallest, 0.7's default), and the reset is logged
	// at WARN with the bytes it skipped, which this tool prints.
	gc.StartOffset = group.OffsetLargest
	if c.FromBeginning {
		gc.StartOffset = group.OffsetSmallest
	}
	if c.Timeout > 0 {
		gc.ConsumerTimeout = c.Timeout
	}
	return gc
}

// runGroup consumes the topic (or, with --whitelist or --blacklist, every
// topic the filter allows, now or later: 0.7's wildcard) as a member of a
// consumer group (Paper §3.2, 0.7's ConsoleConsumer with a
// ZookeeperConsumerConnector): the group's members split the partitions among themselves, and offsets are committed
// to ZooKeeper. It stays in the group until --max-messages, --timeout, or
// ctx ends. Without --group it uses a throw-away group, deleted at exit.
func (c *config) runGroup(ctx context.Context, stdout, stderr io.Writer) (err error) {
	throwAway := c.Group == ""
	if throwAway {
		c.Group = fmt.Sprintf("console-consumer-%d", rand.IntN(100000))
	}
	gc := c.groupConfig()
	gc.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if c.FromBeginning {
		// As 0.7: --from-beginning forgets the group's offsets.
		if err := group.DeleteGroup(ctx, gc); err != nil {
			return fmt.Errorf("--from-beginning: resetting group %q: %w", c.Group, err)
		}
	}
	var gcons *group.Consumer
	if c.Topic != "" {
		gcons, err = group.New(ctx, gc, map[string]int{c.Topic: 1})
	} else {
		gcons, err = group.NewByFilter(ctx, gc, c.filter(), 1)
	}
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, gcons.Close())
		if throwAway {
			err = errors.Join(err, group.DeleteGroup(context.Background(), gc))
		}
	}()
	stream := gcons.FilterStreams()
	if c.Topic != "" {
		stream = gcons.Streams(c.Topic)
	}
	return c.print(ctx, stream[0], stdout)
}

// filter is --whitelist or --blacklist.
func (c *config) filter() group.TopicFilter {
	if c.Blacklist != "" {
		return group.Blacklist(c.Blacklist)
	}
	return group.Whitelist(c.Whitelist)
}

// print writes the stream's messages, one per line, until --max-messages,
// --timeout, or ctx ends.
func (c *config) print(ctx context.Context, stream *group.Stream, stdout io.Writer) error {
	// Each line is written as it arrives, so that a reader of the output
	// (a pipe, a terminal) sees it at once.
	w := bufio.NewWriterSize(stdout, 64<<10)
	for printed := int64(0); c.MaxMessages == 0 || printed < c.MaxMessages; printed++ {
		m, err := stream.Next(ctx)
		switch {
		case errors.Is(err, group.ErrTimeout) || ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		}
		w.Write(m.Payload)
		w.WriteByte('\n')
		if err := w.Flush(); err != nil {
			return err
		}
	}
	stream.Ack() // the last message is consumed: Close commits it
	return nil
}
