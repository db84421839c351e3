package zkcoord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// ErrBrokerIDInUse: another live broker is registered with the same id.
var ErrBrokerIDInUse = errors.New("zkcoord: broker id in use")

// retryInterval is how often a failed registration is retried.
const retryInterval = time.Second

// BrokerRegistration keeps a broker registered in ZooKeeper (Paper §3.2,
// 0.7's KafkaZooKeeper): /brokers/ids/<id> holding "creatorId:host:port" and
// /brokers/topics/<topic>/<id> holding the partition count of every topic
// the broker holds, all ephemeral. When the session expires it registers
// everything again in the new session; a registration that fails for a lost
// connection is retried every second until it succeeds or Close is called.
type BrokerRegistration struct {
	conn   *Conn
	owned  bool      // conn was dialed for the registration: Close ends it
	events *Listener // the registration's news of conn
	info   BrokerInfo
	log    *slog.Logger

	mu         sync.Mutex
	topics     map[string]int  // topic -> partitions to keep registered; guarded by mu
	registered map[string]bool // topics registered in the current session; guarded by mu
	brokerOK   bool            // /brokers/ids/<id> registered in the current session; guarded by mu
	admin      string          // host:port to keep at /brokers/admin/<id> ("" none); guarded by mu
	adminOK    bool            // admin registered in the current session; guarded by mu
	// previous is the session of this broker's previous run whose
	// registration registerFirst removed (0 none): the topic and admin
	// nodes it left are removed too, when found. Guarded by mu.
	previous int64
	// interBroker is the host:port written to /brokers/interbroker/<id>
	// before /brokers/ids/<id> ("" none); set before the loop starts.
	interBroker string
	// logEnds, if set, returns the broker's replicated logs as they are,
	// written to /brokers/logends/<id> before /brokers/ids/<id>; set
	// before the loop starts.
	logEnds func() []LogEnd

	poke   chan struct{} // asks the loop to retry (cap 1)
	cancel context.CancelFunc
	done   chan struct{} // closed when the loop has returned
}

// RegisterBroker opens a session and registers the broker under
// /brokers/ids/<id>. The broker should already listen on host:port.
//
// If another broker is registered with the id, it fails with an error that
// wraps ErrBrokerIDInUse and names the registration found, like 0.7.
// Deviation: 0.7 also refused when the node was left by this same broker's
// previous run whose session had not yet expired (a restart faster than the
// session timeout). A registration with the same host:port cannot belong to a
// live broker, as this broker already holds the port, so RegisterBroker
// removes that node (while the session that made it still owns it) and
// registers anew; one it cannot remove it waits (up to twice the session
// timeout, and ctx) to expire. While the old node stood, a controller took
// the broker for alive and not restarted, and could put it, with the tail
// a power loss took, in a new ISR (the soak's compound seed 113: a follower
// restarted at once after losing 860 KB was in ZooKeeper's ISR of the next
// epoch below the leader's HW).
func RegisterBroker(ctx context.Context, cfg Config, id wire.BrokerID, host string, port int) (*BrokerRegistration, error) {
	if err := checkBroker(id, host, port); err != nil {
		return nil, err
	}
	conn, err := Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return registerOn(ctx, conn, true, id, host, port, "", nil)
}

// RegisterBrokerOn is RegisterBroker on a session the caller owns and may
// share with other roles (0.8's KafkaHealthcheck on the KafkaServer's one
// ZkClient): the registration lives and dies with that session, and
// re-registers in each new one. Close deletes the registration's nodes and
// leaves the session open.
func RegisterBrokerOn(ctx context.Context, conn *Conn, id wire.BrokerID, host string, port int) (*BrokerRegistration, error) {
	if err := checkBroker(id, host, port); err != nil {
		return nil, err
	}
	return registerOn(ctx, conn, false, id, host, port, "", nil)
}

func checkBroker(id wire.BrokerID, host string, port int) error {
	if id < 0 {
		return fmt.Errorf("zkcoord: broker id must be non-negative, got %d", id)
	}
	if host == "" {
		return fmt.Errorf("zkcoord: broker %d: empty host", id)
	}
	if port < 1 || port > 65535 {
		return fmt.Errorf("zkcoord: broker %d: port must be 1-65535, got %d", id, port)
	}
	return nil
}

// registerOn registers the broker on conn (ending conn on failure if owned),
// also writing /brokers/interbroker/<id> holding interBroker (when not
// empty) and /brokers/logends/<id> holding what logEnds returns (when not
// nil) before /brokers/ids/<id>, in this session and every later one.
func registerOn(ctx context.Context, conn *Conn, owned bool, id wire.BrokerID, host string, port int, interBroker string, logEnds func() []LogEnd) (*BrokerRegistration, error) {
	r := &BrokerRegistration{
		conn:       conn,
		owned:      owned,
		events:     conn.Listen(),
		info:       NewBrokerInfo(id, host, port, time.Now()),
		log:        conn.log.With("broker", id),
		topics:     make(map[string]int),
		registered: make(map[string]bool),
		poke:       make(chan struct{}, 1),
		done:       make(chan struct{}),

		interBroker: interBroker,
		logEnds:     logEnds,
	}
	if err := r.registerFirst(ctx); err != nil {
		r.events.Close()
		if owned {
			err = errors.Join(err, conn.Close())
		}
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.loop(lctx)
	return r, nil
}

// registerFirst creates /brokers/ids/<id>, waiting out a stale registration
// of the same host:port. Each creation of the node moves /brokers/ids's
// version in the same transaction (Replication.SeenRegistrations).
func (r *BrokerRegistration) registerFirst(ctx context.Context) error {
	path := BrokerPath(r.info.ID)
	wait := time.NewTimer(2*r.conn.SessionTimeout() + time.Second)
	defer wait.Stop()
	for {
		if err := r.writeBeforeRegistration(true); err != nil {
			return err
		}
		err := r.conn.createEphemeral(path, []byte(r.info.String()), BrokerIDsPath)
		var ne *NodeExistsError
		if !errors.As(err, &ne) {
			if err == nil {
				r.mu.Lock()
				r.brokerOK = true
				r.mu.Unlock()
				r.log.Info("registered broker", "path", path, "value", r.info.String())
			}
			return err
		}
		inUse := fmt.Errorf("%w: a broker is already registered on the path %s (%s). This probably indicates "+
			"that you either have configured a brokerid that is already in use, or else you have shutdown "+
			"this broker and restarted it faster than the zookeeper timeout so it appears to be re-registering",
			ErrBrokerIDInUse, path, ne.Data)
		old, perr := ParseBrokerInfo(r.info.ID, string(ne.Data))
		if perr != nil || old.Host != r.info.Host || old.Port != r.info.Port {
			return inUse
		}
		// Our own previous run's (the deviation on RegisterBroker):
		// removed, so that a controller sees the broker go and come back
		// restarted instead of waiting for the old session to expire.
		if gone, err := r.conn.DeleteOwnedBy(path, ne.Owner); err != nil {
			return err
		} else if gone {
			r.log.Warn("removed the previous registration of this broker, left by a run that did not shut down cleanly", "path", path, "value", string(ne.Data))
			r.mu.Lock()
			r.previous = ne.Owner
			r.mu.Unlock()
			continue
		}
		r.log.Warn("waiting for the previous registration of this broker to expire", "path", path, "value", string(ne.Data))
		if _, exists, err := r.conn.WatchData(path); err != nil {
			return err
		} else if !exists {
			continue
		}
		select {
		case <-r.events.Events():
			// The node changed or went (or other news of a shared
			// session): try again.
		case <-wait.C:
			return inUse
		case <-ctx.Done():
			return fmt.Errorf("zkcoord: broker %d registration: %w", r.info.ID, ctx.Err())
		}
	}
}

// writeBeforeRegistration writes what must be in ZooKeeper before
// /brokers/ids/<id> is: the inter-broker endpoint
// (/brokers/interbroker/<id>) and the log ends (/brokers/logends/<id>), if
// the broker has them. first (the first registration) leaves them alone
// when another broker (another host:port) is registered with this id:
// registerFirst then refuses the id, and must not have redirected that
// broker's orders here or spoken for its logs.
//
// Deviation: Kafka 0.9+ writes every endpoint in the one ephemeral
// registration node; 0.7's value cannot change, so the endpoint has a
// persistent node of its own, rewritten before each registration (a stale
// one, of a broker not in /brokers/ids, is never read).
func (r *BrokerRegistration) writeBeforeRegistration(first bool) error {
	if r.interBroker == "" && r.logEnds == nil {
		return nil
	}
	if first {
		data, ok, err := r.conn.GetMaybe(BrokerPath(r.info.ID))
		if err != nil {
			return err
		}
		if ok {
			if old, perr := ParseBrokerInfo(r.info.ID, string(data)); perr != nil || old.Host != r.info.Host || old.Port != r.info.Port {
				return nil // another broker's: the registration that follows refuses the id
			}
		}
	}
	if r.interBroker != "" {
		if err := r.conn.SetPersistent(InterBrokerEndpointPath(r.info.ID), []byte(r.interBroker)); err != nil {
			return err
		}
	}
	if r.logEnds != nil {
		// Read now, not when the broker started: after a session's expiry
		// the logs hold more than they did then.
		if err := r.conn.SetPersistent(BrokerLogEndsPath(r.info.ID), MarshalLogEnds(r.logEnds())); err != nil {
			return err
		}
	}
	return nil
}

func (r *BrokerRegistration) Info() BrokerInfo { return r.info }

// RegisterTopic registers (or updates) /brokers/topics/<topic>/<id> with the
// number of partitions the broker holds for the topic, and keeps it
// registered. It fails for a bad topic name or when another session holds
// the node; a lost connection is retried in the background.
func (r *BrokerRegistration) RegisterTopic(topic string, partitions int) error {
	if err := ValidateName("topic", topic); err != nil {
		return err
	}
	if partitions < 1 {
		return fmt.Errorf("zkcoord: topic %s: partitions must be at least 1, got %d", topic, partitions)
	}
	r.mu.Lock()
	if r.topics[topic] == partitions && r.registered[topic] {
		r.mu.Unlock()
		return nil
	}
	r.topics[topic] = partitions
	delete(r.registered, topic)
	r.mu.Unlock()
	err := r.registerTopic(topic, partitions)
	if errors.Is(err, ErrNodeExists) || errors.Is(err, ErrClosed) {
		return err
	}
	if err != nil {
		r.log.Warn("topic registration failed; retrying", "topic", topic, "err", err)
		r.wake()
	}
	return nil
}

// createOwn creates the ephemeral node p holding data, first removing one
// that the previous run's session left (previous), whose registration
// registerFirst took over.
func (r *BrokerRegistration) createOwn(p string, data []byte) error {
	err := r.conn.CreateEphemeral(p, data)
	r.mu.Lock()
	previous := r.previous
	r.mu.Unlock()
	var ne *NodeExistsError
	if errors.As(err, &ne) && previous != 0 && ne.Owner == previous {
		if _, err := r.conn.DeleteOwnedBy(p, previous); err != nil {
			return err
		}
		err = r.conn.CreateEphemeral(p, data)
	}
	return err
}

func (r *BrokerRegistration) registerTopic(topic string, partitions int) error {
	path := TopicBrokerPath(topic, r.info.ID)
	if err := r.createOwn(path, []byte(strconv.Itoa(partitions))); err != nil {
		return err
	}
	r.mu.Lock()
	if r.topics[topic] == partitions {
		r.registered[topic] = true
	}
	r.mu.Unlock()
	r.log.Debug("registered topic", "path", path, "partitions", partitions)
	return nil
}

// RegisterAdmin registers (and keeps registered) /brokers/admin/<id>
// holding addr, the host:port of the broker's HTTP listener, for kafka-ui.
// A failed attempt (a lost connection, or the node of this broker's previous
// session not yet expired) is retried in the background.
func (r *BrokerRegistration) RegisterAdmin(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("zkcoord: broker %d admin endpoint %q: %w", r.info.ID, addr, err)
	}
	r.mu.Lock()
	r.admin, r.adminOK = addr, false
	r.mu.Unlock()
	if err := r.registerAdmin(addr); err != nil {
		if errors.Is(err, ErrClosed) {
			return err
		}
		r.log.Warn("admin endpoint registration failed; retrying", "addr", addr, "err", err)
		r.wake()
	}
	return nil
}

func (r *BrokerRegistration) registerAdmin(addr string) error {
	path := BrokerAdminEndpointPath(r.info.ID)
	if err := r.conn.EnsurePath(BrokerAdminPath); err != nil {
		return err
	}
	if err := r.createOwn(path, []byte(addr)); err != nil {
		return err
	}
	r.mu.Lock()
	if r.admin == addr {
		r.adminOK = true
	}
	r.mu.Unlock()
	r.log.Info("registered admin endpoint", "path", path, "addr", addr)
	return nil
}

func (r *BrokerRegistration) wake() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// Close deletes the registration and stops the loop: by ending the
// session when the registration dialed it, else by deleting the nodes it
// created in the current session (RegisterBrokerOn).
func (r *BrokerRegistration) Close() error {
	r.cancel()
	<-r.done
	r.events.Close()
	if r.owned {
		return r.conn.Close()
	}
	r.mu.Lock()
	paths := []string{BrokerPath(r.info.ID)}
	if r.admin != "" {
		paths = append(paths, BrokerAdminEndpointPath(r.info.ID))
	}
	for t := range r.topics {
		paths = append(paths, TopicBrokerPath(t, r.info.ID))
	}
	r.mu.Unlock()
	var errs []error
	for _, p := range paths {
		if _, err := r.conn.DeleteOwned(p); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// loop is the registration's event loop: it re-registers after an expiry and
// retries failed registrations.
func (r *BrokerRegistration) loop(ctx context.Context) {
	defer close(r.done)
	retry := time.NewTimer(retryInterval)
	retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-r.events.Events():
			if !ok {
				return
			}
			if ev.Type != EventNewSession {
				continue
			}
			r.log.Info("re-registering broker and topics in the new session")
			r.mu.Lock()
			r.brokerOK, r.adminOK = false, false
			clear(r.registered)
			r.mu.Unlock()
		case <-r.poke:
		case <-retry.C:
		}
		if !r.sync() {
			retry.Reset(retryInterval)
		}
	}
}

// sync registers whatever is not registered in the current session; it
// reports whether everything is.
func (r *BrokerRegistration) sync() bool {
	r.mu.Lock()
	brokerOK := r.brokerOK
	admin := ""
	if !r.adminOK {
		admin = r.admin
	}
	pending := make(map[string]int)
	for t, n := range r.topics {
		if !r.registered[t] {
			pending[t] = n
		}
	}
	r.mu.Unlock()
	if !brokerOK {
		if err := r.writeBeforeRegistration(false); err != nil {
			r.log.Error("inter-broker endpoint or log ends registration failed; retrying", "id", r.info.ID, "err", err)
			return false
		}
		if err := r.conn.createEphemeral(BrokerPath(r.info.ID), []byte(r.info.String()), BrokerIDsPath); err != nil {
			r.log.Error("broker re-registration failed; retrying", "path", BrokerPath(r.info.ID), "err", err)
			return false
		}
		r.mu.Lock()
		r.brokerOK = true
		r.mu.Unlock()
		r.log.Info("registered broker", "path", BrokerPath(r.info.ID), "value", r.info.String())
	}
	ok := true
	if admin != "" {
		if err := r.registerAdmin(admin); err != nil {
			r.log.Error("admin endpoint registration failed; retrying", "path", BrokerAdminEndpointPath(r.info.ID), "err", err)
			ok = false
		}
	}
	for t, n := range pending {
		if err := r.registerTopic(t, n); err != nil {
			r.log.Error("topic registration failed; retrying", "topic", t, "err", err)
			ok = false
		}
	}
	return ok
}
