package testbed_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/netdb11/kafka/experiments/testbed"
)

// A server in the broker host, a client in the client host, and the link
// utilisation of the run; socat stands for a broker and a producer. (Not run
// by go test: it needs root.)
func Example() {
	ctx := context.Background()
	tb, err := testbed.Up(ctx, testbed.Options{Link: testbed.Link1Gbit})
	if err != nil {
		log.Fatal(err)
	}
	broker, err := tb.Addr("broker")
	if err != nil {
		log.Fatal(err)
	}
	server := tb.Command(ctx, "broker", "socat", "-u", "TCP-LISTEN:9092,reuseaddr", "OPEN:/dev/null")
	if err := server.Start(); err != nil {
		log.Fatal(err)
	}
	before, err := tb.LinkBytes("client")
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	client := tb.Command(ctx, "client", "socat", "-u", "OPEN:/bin/sh", "TCP:"+net.JoinHostPort(broker, "9092")+",retry=50,interval=0.1")
	if err := client.Run(); err != nil {
		log.Fatal(err)
	}
	after, err := tb.LinkBytes("client")
	if err != nil {
		log.Fatal(err)
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("sent %d bytes on the link, %.1f%% of its capacity\n",
		after.Sent-before.Sent, 100*float64(after.Sent-before.Sent)*8/secs/float64(tb.LinkRate()))

	// Down kills the server; Wait reaps it.
	if err := tb.Down(); err != nil {
		log.Print(err)
	}
	_ = server.Wait()
}
