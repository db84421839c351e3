package zkcoord

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/netdb11/kafka/broker/wire"
)

// Election is the controller role on a session (0.8's
// ZookeeperLeaderElector and the controller epoch of ZkUtils): a broker's
// candidate elects itself on the broker's one session with Elect (the
// /controller node lives and dies with that session), the elected
// controller bumps the epoch that fences its predecessors' orders, and
// anyone reads who leads. Make one with ElectionOn.
type Election struct{ s *Conn }

// ElectionOn returns the controller role on session s.
func ElectionOn(s *Conn) Election { return Election{s: s} }

// Held reports whether /controller belongs to this session: the candidate
// still leads after its connection came back with the session alive.
func (e Election) Held() (bool, error) {
	owner, ok, err := e.s.EphemeralOwner(ControllerPath)
	return err == nil && ok && owner == e.s.SessionID(), err
}

// ControllerInfo is the value of /controller.
type ControllerInfo struct {
	Version   int           `json:"version"`
	BrokerID  wire.BrokerID `json:"brokerid"`
	Timestamp string        `json:"timestamp"`
}

// ParseControllerInfo parses the value of /controller.
func ParseControllerInfo(data []byte) (ControllerInfo, error) {
	var c ControllerInfo
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("zkcoord: bad controller registration %q: %w", data, err)
	}
	return c, nil
}

// Elect tries to create /controller for broker id. It returns true if
// this session now holds it, false if another session does (see Held).
func (e Election) Elect(id wire.BrokerID, now time.Time) (bool, error) {
	c := e.s
	data, _ := json.Marshal(ControllerInfo{Version: 1, BrokerID: id, Timestamp: strconv.FormatInt(now.UnixMilli(), 10)})
	err := c.CreateEphemeral(ControllerPath, data)
	if errors.Is(err, ErrNodeExists) {
		return false, nil
	}
	return err == nil, err
}

// Controller reads /controller: the controller's id, or ok false if none.
func (e Election) Controller() (id wire.BrokerID, ok bool, err error) {
	c := e.s
	data, ok, err := c.GetMaybe(ControllerPath)
	if err != nil || !ok {
		return 0, false, err
	}
	info, err := ParseControllerInfo(data)
	return info.BrokerID, err == nil, err
}

// IncrementEpoch bumps /controller_epoch by one with a
// compare-and-set (creating it at 1) and returns the new epoch and the
// node's version after the bump, which fences the new controller's writes
// (Replication.Fenced). Two controllers racing cannot both get the same
// epoch.
func (e Election) IncrementEpoch() (epoch, version int32, err error) {
	c := e.s
	for attempt := 0; attempt < 100; attempt++ {
		data, v, err := c.GetVersion(ControllerEpochPath)
		if errors.Is(err, ErrNoNode) {
			err = c.CreatePersistent(ControllerEpochPath, []byte("1"))
			if errors.Is(err, ErrNodeExists) {
				continue
			}
			return 1, 0, err
		}
		if err != nil {
			return 0, 0, err
		}
		old, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
		if err != nil {
			return 0, 0, fmt.Errorf("zkcoord: bad controller epoch %q", data)
		}
		nv, err := c.SetIfVersion(ControllerEpochPath, []byte(strconv.FormatInt(old+1, 10)), v)
		if errors.Is(err, ErrBadVersion) {
			continue
		}
		return int32(old + 1), nv, err
	}
	return 0, 0, fmt.Errorf("%w: %s kept changing", ErrBadVersion, ControllerEpochPath)
}

// Epoch reads /controller_epoch (0 when missing).
func (e Election) Epoch() (int32, error) {
	c := e.s
	data, ok, err := c.GetMaybe(ControllerEpochPath)
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("zkcoord: bad controller epoch %q", data)
	}
	return int32(n), nil
}
