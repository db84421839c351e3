package zkcoord

import "sort"

// Assign is the rebalance decision of every consumer thread for one topic:
// Paper §3.2, Algorithm 1, as Kafka 0.7's ZookeeperConsumerConnector does it.
// The partitions ("<brokerId>-<partition>") are sorted lexicographically as
// strings (so "1-10" comes before "1-2", as in 0.7) and the thread ids too.
// With P partitions and C threads, n = P/C and extra = P mod C; the thread at
// position pos gets count = n + (1 if pos < extra) partitions starting at
// start = n*pos + min(pos, extra). Threads beyond P get nothing.
//
// Every consumer evaluates this independently from the same registry
// contents, so they agree without talking to each other. The result maps each
// thread id to its partitions in order; threads with nothing map to nil.
func Assign(partitions, threads []string) map[string][]string {
	ps := sortedCopy(partitions)
	ts := sortedCopy(threads)
	out := make(map[string][]string, len(ts))
	for pos, t := range ts {
		out[t] = rangeFor(ps, len(ts), pos)
	}
	return out
}

// AssignThread is Assign for one thread: the partitions it owns, or nil when
// it is not among threads or gets none.
func AssignThread(partitions, threads []string, thread string) []string {
	ts := sortedCopy(threads)
	pos := sort.SearchStrings(ts, thread)
	if pos == len(ts) || ts[pos] != thread {
		return nil
	}
	return rangeFor(sortedCopy(partitions), len(ts), pos)
}

// rangeFor is the range of sorted partitions ps owned by position pos of c threads.
func rangeFor(ps []string, c, pos int) []string {
	if c == 0 {
		return nil
	}
	n, extra := len(ps)/c, len(ps)%c
	start := n*pos + min(pos, extra)
	count := n
	if pos < extra {
		count++
	}
	if count == 0 {
		return nil
	}
	return ps[start : start+count : start+count]
}

// sortedCopy returns the distinct strings of in, sorted.
func sortedCopy(in []string) []string {
	out := make([]string, len(in))
	copy(out, in)
	sort.Strings(out)
	j := 0
	for i, s := range out {
		if i > 0 && s == out[j-1] {
			continue
		}
		out[j] = s
		j++
	}
	return out[:j]
}
