package controller

import (
	"io"
	"log/slog"
	"time"

	"github.com/netdb11/kafka/broker/clustertls"
	"github.com/netdb11/kafka/broker/wire"
)

// Config configures a broker's controller candidate. The names in
// parentheses are the server.properties keys.
type Config struct {
	// BrokerID is this broker (brokerid).
	BrokerID wire.BrokerID
	// UncleanElection is unclean.leader.election.enable (default false).
	UncleanElection bool
	// MinInsyncReplicas is min.insync.replicas (default 1): a dead
	// follower leaves the ISR only while the ISR keeps that many members.
	MinInsyncReplicas int
	// Backoff is the wait before retrying a failed election step
	// (replica.fetch.backoff.ms; default 100 ms).
	Backoff time.Duration
	// RequestTimeout bounds a round trip to another broker
	// (controller.socket.timeout.ms; default 30 s), at most orderTimeout.
	RequestTimeout time.Duration
	// TLS is the broker's inter-broker keystore: the senders dial the
	// other brokers' inter-broker listeners with it (nil: plaintext).
	TLS *clustertls.Keystore
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger receives the controller's logs (nil: discarded).
	Logger *slog.Logger
}

// New returns a controller candidate; Run it on the broker's session.
func New(cfg Config) *Controller {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Controller{cfg: cfg, log: cfg.Logger}
}

// Stats returns how many leaders this broker elected (a failed leader
// replaced, or the preferred replica restored) and how many ISRs it shrank
// as controller since it started.
func (c *Controller) Stats() (leaderElections, isrShrinks uint64) {
	return c.elections.Load(), c.shrinks.Load()
}
