package producer

import "sync"

// waitQueue holds the requests waiting on one pipelined connection for
// their answers, oldest first: the broker answers a connection's requests
// in order, so the connection's reader hands each answer to the oldest
// waiting request. brokerConn's round trips (T = bool: answered or not)
// and reqConn's requests (T = reply) use it.
type waitQueue[T any] struct {
	mu      sync.Mutex
	waiting []chan T
	failed  bool
	failure T // what every request gets once failed
}

// push adds a request; its channel receives the outcome (at once if the
// queue has failed).
func (q *waitQueue[T]) push() chan T {
	ch := make(chan T, 1)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failed {
		ch <- q.failure
		return ch
	}
	q.waiting = append(q.waiting, ch)
	return ch
}

// answer hands v to the oldest waiting request; false means an answer
// nobody waited for.
func (q *waitQueue[T]) answer(v T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		return false
	}
	q.waiting[0] <- v
	q.waiting = q.waiting[1:]
	return true
}

// fail ends every waiting request, and every later one, with failure.
func (q *waitQueue[T]) fail(failure T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failed, q.failure = true, failure
	for _, ch := range q.waiting {
		ch <- failure
	}
	q.waiting = nil
}
