package zkcoord

import "sync"

// Listener receives a copy of every event of a session: each role sharing
// one session (0.8's KafkaServer gives the broker's registration, its
// controller candidacy and its replica manager one ZkClient) listens on its
// own, so that a role busy with ZooKeeper or with other brokers holds up
// no other role's news. Every listener sees every watch firing of the
// session, also those another role armed (a role re-reads on news it did
// not ask for, which is harmless, as watches are one-shot hints), and every
// session change: EventSessionExpired and EventNewSession, and, when it was
// made with Listen, EventDisconnected and EventReconnected.
//
// A Listener queues what its reader has not taken yet, so the client
// library's callback never blocks on a slow role. Make one with
// Conn.Listen; Close it when the role stops.
type Listener struct {
	c *Conn
	// states: the listener also gets EventDisconnected and EventReconnected.
	states bool

	queue  []Event       // not yet delivered; guarded by c.mu
	wake   chan struct{} // poked (non-blocking) when queue grows
	events chan Event
	done   chan struct{} // closed by Close
	once   sync.Once
	wg     sync.WaitGroup // the pump
}

// Listen returns a new listener on the session: from now on it gets every
// watch firing and session change (see Listener), in order, on Events.
// After Close of the Conn its channel is closed.
func (c *Conn) Listen() *Listener {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listenLocked(true)
}

func (c *Conn) listenLocked(states bool) *Listener {
	l := &Listener{c: c, states: states, wake: make(chan struct{}, 1), events: make(chan Event), done: make(chan struct{})}
	if c.closed {
		close(l.done)
		close(l.events)
		return l
	}
	c.listeners = append(c.listeners, l)
	l.wg.Add(1)
	go l.pump()
	return l
}

// defaultListenerLocked returns the listener behind Conn.Events, made at
// the first call of Events or the first watch set, whichever comes first:
// a Conn shared by roles that each Listen, none reading Events, queues
// nothing for it.
func (c *Conn) defaultListenerLocked() *Listener {
	if c.deflt == nil {
		c.deflt = c.listenLocked(false)
	}
	return c.deflt
}

// Events returns the channel on which the listener's events arrive, in
// order. It is closed by Close (of the listener or of the Conn). Exactly
// one goroutine should read it.
func (l *Listener) Events() <-chan Event { return l.events }

// Close stops the listener and closes its Events channel. It is safe to
// call more than once.
func (l *Listener) Close() {
	l.c.mu.Lock()
	for i, x := range l.c.listeners {
		if x == l {
			l.c.listeners = append(l.c.listeners[:i], l.c.listeners[i+1:]...)
			break
		}
	}
	l.c.mu.Unlock()
	l.stop()
}

// stop ends the pump and closes Events.
func (l *Listener) stop() {
	l.once.Do(func() {
		select {
		case <-l.done: // made on a closed Conn
			return
		default:
		}
		close(l.done)
		l.wg.Wait()
		close(l.events)
	})
}

// enqueueLocked adds ev to the listener's queue, unless the same watch news
// is already waiting there (the role has not yet seen it). The caller holds
// c.mu.
func (l *Listener) enqueueLocked(ev Event) {
	if ev.Path != "" {
		for _, q := range l.queue {
			if q == ev {
				return
			}
		}
	}
	l.queue = append(l.queue, ev)
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// pump moves queued events to the Events channel.
func (l *Listener) pump() {
	defer l.wg.Done()
	mu := &l.c.mu
	for {
		mu.Lock()
		if len(l.queue) == 0 {
			mu.Unlock()
			select {
			case <-l.wake:
				continue
			case <-l.done:
				return
			}
		}
		ev := l.queue[0]
		l.queue[0] = Event{}
		l.queue = l.queue[1:]
		mu.Unlock()
		select {
		case l.events <- ev:
		case <-l.done:
			return
		}
	}
}
