package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// settled is what waitFlushed reads of a replica on its admin endpoint
// (/admin/partitions/{topic}/{partition}: broker/admin.Info).
type settled struct {
	Flushed     int64 `json:"flushed_offset"`
	End         int64 `json:"end_offset"`
	Replication *struct {
		Role          string `json:"role"`
		HighWatermark int64  `json:"high_watermark"`
	} `json:"replication"`
}

// waitFlushed waits, up to bound, until every replica of every partition
// has flushed all it wrote (paper §3.1: readers see only flushed
// messages), holds as much as the others, and the leader's high watermark
// covers it: then the final reads see every acknowledged message. Before
// issue 23's quicker make faults the harness slept bound (twice the flush
// interval) after every replicated trial; this returns as soon as the logs
// say so (at worst after bound, as before). It reports how long it waited
// and whether the logs settled.
func (t *trial) waitFlushed(ctx context.Context, bound time.Duration) (time.Duration, bool) {
	began := time.Now()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		return t.cl.Dial(ctx, addr)
	}}}
	defer client.CloseIdleConnections()
	for {
		if t.flushed(ctx, client) {
			return time.Since(began), true
		}
		if time.Since(began) >= bound || sleep(ctx, 100*time.Millisecond) != nil {
			return time.Since(began), false
		}
	}
}

// flushed reports whether every partition is settled (waitFlushed).
func (t *trial) flushed(ctx context.Context, client *http.Client) bool {
	for _, p := range t.w.parts {
		var end int64 = -1
		leaders := 0
		for b := 1; b <= t.cfg.Brokers; b++ {
			url := fmt.Sprintf("http://%s/admin/partitions/%s/%d", net.JoinHostPort(t.cl.Addr(brokerHost(b)), strconv.Itoa(adminPort)), p.topic, p.part)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return false
			}
			resp, err := client.Do(req)
			if err != nil {
				return false
			}
			var s settled
			err = json.NewDecoder(resp.Body).Decode(&s)
			resp.Body.Close()
			if resp.StatusCode == http.StatusNotFound {
				continue // not a replica of p
			}
			if err != nil || resp.StatusCode != http.StatusOK || s.Replication == nil || s.Flushed != s.End || (end >= 0 && s.End != end) {
				return false
			}
			end = s.End
			if s.Replication.Role == "leader" {
				leaders++
				if s.Replication.HighWatermark != s.End {
					return false
				}
			}
		}
		if end < 0 || leaders != 1 {
			return false
		}
	}
	return true
}
