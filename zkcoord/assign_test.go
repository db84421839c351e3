package zkcoord

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
)

func TestAssign(t *testing.T) {
	tests := []struct {
		name       string
		partitions []string
		threads    []string
		want       map[string][]string
	}{
		{
			name:       "six partitions three consumers: two each",
			partitions: []string{"0-0", "0-1", "1-0", "1-1", "2-0", "2-1"},
			threads:    []string{"c-0", "b-0", "a-0"},
			want: map[string][]string{
				"a-0": {"0-0", "0-1"},
				"b-0": {"1-0", "1-1"},
				"c-0": {"2-0", "2-1"},
			},
		},
		{
			name:       "seven consumers on six partitions: the last idles",
			partitions: []string{"0-0", "0-1", "0-2", "0-3", "0-4", "0-5"},
			threads:    []string{"g-0", "f-0", "e-0", "d-0", "c-0", "b-0", "a-0"},
			want: map[string][]string{
				"a-0": {"0-0"}, "b-0": {"0-1"}, "c-0": {"0-2"}, "d-0": {"0-3"},
				"e-0": {"0-4"}, "f-0": {"0-5"}, "g-0": nil,
			},
		},
		{
			name:       "remainder goes to the first threads",
			partitions: []string{"0-0", "0-1", "0-2", "0-3", "0-4", "0-5", "0-6"},
			threads:    []string{"x-0", "x-1", "x-2"},
			want: map[string][]string{
				"x-0": {"0-0", "0-1", "0-2"},
				"x-1": {"0-3", "0-4"},
				"x-2": {"0-5", "0-6"},
			},
		},
		{
			name: "partitions sort as strings, as in 0.7: 1-10 before 1-2",
			partitions: []string{"1-0", "1-1", "1-2", "1-3", "1-4", "1-5", "1-6", "1-7", "1-8", "1-9",
				"1-10", "1-11"},
			threads: []string{"t-0", "t-1"},
			want: map[string][]string{
				"t-0": {"1-0", "1-1", "1-10", "1-11", "1-2", "1-3"},
				"t-1": {"1-4", "1-5", "1-6", "1-7", "1-8", "1-9"},
			},
		},
		{
			name:       "thread ids sort as strings: c-10 before c-2",
			partitions: []string{"0-0", "0-1", "0-2"},
			threads:    []string{"c-2", "c-10", "c-1"},
			want:       map[string][]string{"c-1": {"0-0"}, "c-10": {"0-1"}, "c-2": {"0-2"}},
		},
		{
			name:       "no partitions",
			partitions: nil,
			threads:    []string{"a-0", "b-0"},
			want:       map[string][]string{"a-0": nil, "b-0": nil},
		},
		{
			name:       "no threads",
			partitions: []string{"0-0"},
			threads:    nil,
			want:       map[string][]string{},
		},
		{
			name:       "duplicates are ignored",
			partitions: []string{"0-0", "0-0", "0-1"},
			threads:    []string{"a-0", "a-0"},
			want:       map[string][]string{"a-0": {"0-0", "0-1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Assign(tt.partitions, tt.threads)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Assign(%v, %v)\n got %v\nwant %v", tt.partitions, tt.threads, got, tt.want)
			}
			for thread, want := range tt.want {
				if got := AssignThread(tt.partitions, tt.threads, thread); !reflect.DeepEqual(got, want) {
					t.Errorf("AssignThread(%s) = %v, want %v", thread, got, want)
				}
			}
		})
	}
}

func TestAssignThreadUnknown(t *testing.T) {
	if got := AssignThread([]string{"0-0"}, []string{"a-0"}, "b-0"); got != nil {
		t.Fatalf("AssignThread of a thread not in the group = %v, want nil", got)
	}
}

// TestAssignProperties checks, for many sizes, that the assignment covers
// every partition exactly once, that shares differ by at most one, and that
// the start/count formulas of Algorithm 1 hold.
func TestAssignProperties(t *testing.T) {
	for p := 0; p <= 25; p++ {
		for c := 1; c <= 12; c++ {
			var parts, threads []string
			for i := 0; i < p; i++ {
				parts = append(parts, fmt.Sprintf("%d-%d", i%3, i))
			}
			for i := 0; i < c; i++ {
				threads = append(threads, fmt.Sprintf("consumer%02d-0", i))
			}
			got := Assign(parts, threads)
			seen := map[string]string{}
			minShare, maxShare := p+1, -1
			sortedParts := append([]string(nil), parts...)
			sort.Strings(sortedParts)
			sortedThreads := append([]string(nil), threads...)
			sort.Strings(sortedThreads)
			for pos, th := range sortedThreads {
				share := got[th]
				n, extra := p/c, p%c
				start := n*pos + min(pos, extra)
				count := n
				if pos < extra {
					count++
				}
				if len(share) != count {
					t.Fatalf("P=%d C=%d thread %s: %d partitions, want %d", p, c, th, len(share), count)
				}
				if count > 0 && share[0] != sortedParts[start] {
					t.Fatalf("P=%d C=%d thread %s starts at %s, want %s", p, c, th, share[0], sortedParts[start])
				}
				minShare, maxShare = min(minShare, len(share)), max(maxShare, len(share))
				for _, part := range share {
					if prev, dup := seen[part]; dup {
						t.Fatalf("P=%d C=%d: %s assigned to %s and %s", p, c, part, prev, th)
					}
					seen[part] = th
				}
			}
			if len(seen) != p {
				t.Fatalf("P=%d C=%d: %d partitions assigned, want %d", p, c, len(seen), p)
			}
			if maxShare-minShare > 1 {
				t.Fatalf("P=%d C=%d: shares range from %d to %d", p, c, minShare, maxShare)
			}
		}
	}
}
