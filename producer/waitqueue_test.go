package producer

import "testing"

// TestWaitQueue: answers go to the requests in the order they were pushed;
// an answer nobody waits for is refused; fail ends the waiting requests
// and every later one with the failure.
func TestWaitQueue(t *testing.T) {
	var q waitQueue[int]
	a, b := q.push(), q.push()
	if !q.answer(1) || !q.answer(2) {
		t.Fatal("an answer to a waiting request was refused")
	}
	if got := []int{<-a, <-b}; got[0] != 1 || got[1] != 2 {
		t.Fatalf("answers %v, want [1 2] in push order", got)
	}
	if q.answer(3) {
		t.Fatal("an answer nobody waited for was accepted")
	}
	c := q.push()
	q.fail(-1)
	d := q.push()
	if got := []int{<-c, <-d}; got[0] != -1 || got[1] != -1 {
		t.Fatalf("after fail: %v, want [-1 -1]", got)
	}
	if q.answer(4) {
		t.Fatal("an answer after fail was accepted")
	}
}
