package zkcoord

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// ParseBrokerID parses a decimal broker id (a child name under /brokers/ids).
func ParseBrokerID(s string) (wire.BrokerID, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("zkcoord: bad broker id %q: want a non-negative 32-bit integer", s)
	}
	return wire.BrokerID(n), nil
}

// BrokerInfo is a broker's registration: the value of /brokers/ids/<id>.
// Its address (id, host, port) is the tree's one broker-address type,
// wire.Broker; the registration adds the creator id.
type BrokerInfo struct {
	// Broker is the broker's id (the node's name) and where it listens.
	wire.Broker
	// CreatorID is "<host>-<milliseconds since the epoch>" of the
	// registration (0.7's creatorId).
	CreatorID string
}

// NewBrokerInfo makes the registration of a broker starting now.
func NewBrokerInfo(id wire.BrokerID, host string, port int, now time.Time) BrokerInfo {
	return BrokerInfo{Broker: wire.Broker{ID: id, Host: host, Port: port}, CreatorID: host + "-" + strconv.FormatInt(now.UnixMilli(), 10)}
}

// Created is when the registration was made, read from its creator id
// ("<host>-<ms since the epoch>"); false when the id carries no time.
func (b BrokerInfo) Created() (time.Time, bool) {
	ms, err := strconv.ParseInt(b.CreatorID[strings.LastIndexByte(b.CreatorID, '-')+1:], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// String is the registry value, exactly as 0.7 writes it: "creatorId:host:port"
// (not wire.Broker's "id:host:port").
func (b BrokerInfo) String() string {
	return b.CreatorID + ":" + b.Host + ":" + strconv.Itoa(b.Port)
}

// ParseBrokerInfo parses the value of /brokers/ids/<id>. The creator id is the
// first ":"-separated field and the port the last; the host is what lies
// between (0.7 split on ":" and took fields 0, 1 and 2).
func ParseBrokerInfo(id wire.BrokerID, value string) (BrokerInfo, error) {
	first := strings.IndexByte(value, ':')
	last := strings.LastIndexByte(value, ':')
	if first < 0 || first == last {
		return BrokerInfo{}, fmt.Errorf("zkcoord: broker %d: bad registration %q: want creatorId:host:port", id, value)
	}
	host := value[first+1 : last]
	port, err := strconv.Atoi(value[last+1:])
	if err != nil || port < 0 || port > 65535 || host == "" {
		return BrokerInfo{}, fmt.Errorf("zkcoord: broker %d: bad registration %q: want creatorId:host:port", id, value)
	}
	return BrokerInfo{Broker: wire.Broker{ID: id, Host: host, Port: port}, CreatorID: value[:first]}, nil
}

// DefaultHost is the host a broker registers when its hostname property is
// unset: like 0.7 (InetAddress.getLocalHost.getHostAddress), the address the
// machine's name resolves to, or 127.0.0.1 when it does not resolve.
func DefaultHost() string {
	name, err := os.Hostname()
	if err != nil {
		return "127.0.0.1"
	}
	addrs, err := net.LookupHost(name)
	if err != nil || len(addrs) == 0 {
		return "127.0.0.1"
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
			return a
		}
	}
	return addrs[0]
}

// ParseBrokerPartition parses "<brokerId>-<partition>".
func ParseBrokerPartition(s string) (wire.BrokerPartition, error) {
	b, part, ok := strings.Cut(s, "-")
	if !ok {
		return wire.BrokerPartition{}, fmt.Errorf("zkcoord: bad partition name %q: want <brokerId>-<partition>", s)
	}
	id, err := ParseBrokerID(b)
	if err != nil {
		return wire.BrokerPartition{}, fmt.Errorf("zkcoord: bad partition name %q: want <brokerId>-<partition>", s)
	}
	n, err := strconv.ParseInt(part, 10, 32)
	if err != nil || n < 0 {
		return wire.BrokerPartition{}, fmt.Errorf("zkcoord: bad partition name %q: want <brokerId>-<partition>", s)
	}
	return wire.BrokerPartition{Broker: id, Partition: wire.Partition(n)}, nil
}

// NewConsumerID makes a consumer id as 0.7 does:
// "<group>_<hostname>-<milliseconds>-<8 hex digits>".
func NewConsumerID(group string, now time.Time) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; the clock still makes the id unique enough.
		return fmt.Sprintf("%s_%s-%d-%08x", group, host, now.UnixMilli(), uint32(now.UnixNano()))
	}
	return fmt.Sprintf("%s_%s-%d-%s", group, host, now.UnixMilli(), hex.EncodeToString(b[:]))
}

// ThreadID is the id of a consumer's n-th stream for a topic, the value of
// the owner nodes it claims: "<consumerId>-<n>".
func ThreadID(consumerID string, n int) string {
	return consumerID + "-" + strconv.Itoa(n)
}
