package server

import (
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/netdb11/kafka/broker/log"
	"github.com/netdb11/kafka/broker/wire"
)

// FuzzServeConn feeds arbitrary bytes to a connection of a real server (over
// a real log manager): whatever arrives, the server must not panic, must
// close or keep the connection cleanly, and must end when the client goes
// away. Seeds are valid requests of every type, alone and pipelined.
func FuzzServeConn(f *testing.F) {
	set := wire.NewMessageSet([]byte("m1"), []byte("m2"))
	reqs := [][]byte{
		wire.AppendRequest(nil, produceReq("t", 0, set)),
		wire.AppendRequest(nil, produceReq("t", -1, set)),
		wire.AppendRequest(nil, fetchReq("t", 0, 0, 100)),
		wire.AppendRequest(nil, fetchReq("t", 0, 11, 5)),
		wire.AppendRequest(nil, offsetsReq("t", 0, wire.EarliestTime, 4)),
		wire.AppendRequest(nil, &wire.Request{Type: wire.RequestMultiFetch, Fetch: []wire.FetchRequest{
			{Topic: "t", Partition: 0, MaxSize: 50}, {Topic: "u", Partition: 1, Offset: 3, MaxSize: 50}}}),
		wire.AppendRequest(nil, &wire.Request{Type: wire.RequestMultiProduce, Produce: []wire.ProduceRequest{
			{Topic: "t", Partition: 1, Messages: set}, {Topic: "u", Partition: 0, Messages: set}}}),
	}
	var all []byte
	for _, r := range reqs {
		f.Add(r)
		all = append(all, r...)
	}
	f.Add(all)
	pipelined := slices.Concat(reqs[0], reqs[0], reqs[0])
	f.Add(pipelined)
	pipelined[len(reqs[0])+len(reqs[0])-1] ^= 1 // a bad CRC in the middle one
	f.Add(pipelined)
	f.Add(binary.BigEndian.AppendUint32(nil, 1<<31-1))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 1})

	lc := log.DefaultConfig()
	lc.Dir = f.TempDir()
	lc.NumPartitions = 2
	lc.FlushInterval = 1
	logs, err := log.Open(lc)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { logs.Close() })
	srv, err := New(Config{
		Logs:            logs,
		MaxRequestSize:  1 << 16,
		UseSendfile:     true, // a net.Pipe has no socket: the copy path runs
		ShutdownTimeout: time.Second,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, in []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.serveConn(server)
		}()
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			io.Copy(io.Discard, client)
		}()
		// Fed in uneven chunks, as TCP may deliver them.
		for len(in) > 0 {
			n := min(len(in), 1+int(in[0])%97)
			if _, err := client.Write(in[:n]); err != nil {
				break // the server closed the connection
			}
			in = in[n:]
		}
		client.Close()
		<-done
		<-drained
	})
}
