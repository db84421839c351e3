package zkcoord

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// acl is the ACL of every node Kafka 0.7 creates: open to all.
var acl = zk.WorldACL(zk.PermAll)

// Get returns the data of the node at p.
func (c *Conn) Get(p string) ([]byte, error) {
	full, err := c.full(p)
	if err != nil {
		return nil, err
	}
	data, _, err := c.zk.Get(full)
	return data, c.wrap("get", p, err)
}

// GetMaybe returns the data of the node at p and whether it exists
// (0.7's readDataMaybeNull).
func (c *Conn) GetMaybe(p string) ([]byte, bool, error) {
	data, err := c.Get(p)
	if errors.Is(err, ErrNoNode) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// Exists reports whether the node at p exists.
func (c *Conn) Exists(p string) (bool, error) {
	full, err := c.full(p)
	if err != nil {
		return false, err
	}
	ok, _, err := c.zk.Exists(full)
	return ok, c.wrap("exists", p, err)
}

// EphemeralOwner returns the id of the session that owns the ephemeral
// node at p (0 for a persistent node) and whether p exists.
func (c *Conn) EphemeralOwner(p string) (int64, bool, error) {
	full, err := c.full(p)
	if err != nil {
		return 0, false, err
	}
	ok, stat, err := c.zk.Exists(full)
	if err != nil || !ok {
		return 0, false, c.wrap("exists", p, err)
	}
	return stat.EphemeralOwner, true, nil
}

// Children returns the names of the children of p, or nil when p does not
// exist (0.7's getChildrenParentMayNotExist).
func (c *Conn) Children(p string) ([]string, error) {
	full, err := c.full(p)
	if err != nil {
		return nil, err
	}
	names, _, err := c.zk.Children(full)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return names, c.wrap("children", p, err)
}

// WatchChildren returns the children of p (nil when p does not exist) and
// leaves a watch that fires once, as an EventChildren (or EventCreated /
// EventDeleted) on Events, when they change. A path already watched is read
// without adding a second watch.
func (c *Conn) WatchChildren(p string) ([]string, error) {
	full, err := c.full(p)
	if err != nil {
		return nil, err
	}
	k := watchKey{full, watchChildren}
	if !c.arm(k) {
		names, _, err := c.zk.Children(full)
		if !errors.Is(err, zk.ErrNoNode) {
			return names, c.wrap("children", p, err)
		}
		// The node vanished under a pending children watch, which fired as
		// EventDeleted (or is about to): fall through to watch its creation.
		c.disarm(k)
		return nil, c.watchCreation(p, full)
	}
	names, _, _, err := c.zk.ChildrenW(full)
	if err == nil {
		return names, nil
	}
	c.disarm(k)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, c.watchCreation(p, full)
	}
	return nil, c.wrap("watch children", p, err)
}

// watchCreation leaves an exists watch on a missing node; if the node appeared
// in between, it arms the children watch instead by queueing an EventCreated
// so that the component re-reads.
func (c *Conn) watchCreation(p, full string) error {
	k := watchKey{full, watchExists}
	if !c.arm(k) {
		return nil
	}
	ok, _, _, err := c.zk.ExistsW(full)
	if err != nil {
		c.disarm(k)
		return c.wrap("watch exists", p, err)
	}
	if ok {
		// Created meanwhile: the library set a data watch, not an exists one.
		c.mu.Lock()
		delete(c.armed, k)
		c.armed[watchKey{full, watchData}] = true
		c.enqueueLocked(Event{Type: EventCreated, Path: p})
		c.mu.Unlock()
	}
	return nil
}

// WatchData returns the data of p and whether it exists, and leaves a watch
// that fires once when p is created, changed or deleted.
func (c *Conn) WatchData(p string) ([]byte, bool, error) {
	full, err := c.full(p)
	if err != nil {
		return nil, false, err
	}
	dk, ek := watchKey{full, watchData}, watchKey{full, watchExists}
	c.mu.Lock()
	pending := c.armed[dk] || c.armed[ek]
	c.mu.Unlock()
	if pending {
		data, _, err := c.zk.Get(full)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, false, nil
		}
		return data, err == nil, c.wrap("get", p, err)
	}
	// exists+get is two requests; get first, and fall back to an exists
	// watch when the node is missing.
	if c.arm(dk) {
		data, _, _, err := c.zk.GetW(full)
		if err == nil {
			return data, true, nil
		}
		c.disarm(dk)
		if !errors.Is(err, zk.ErrNoNode) {
			return nil, false, c.wrap("watch data", p, err)
		}
	}
	if err := c.watchCreation(p, full); err != nil {
		return nil, false, err
	}
	return nil, false, nil
}

// NodeExistsError reports a node that exists and is not this session's.
type NodeExistsError struct {
	// Path is the node, relative to the chroot.
	Path string
	// Data is what the node holds.
	Data []byte
	// Owner is the session owning the ephemeral node (0 for persistent).
	Owner int64
}

// Error describes the node and its holder.
func (e *NodeExistsError) Error() string {
	return fmt.Sprintf("zkcoord: node %s exists with value %q (session %#x)", e.Path, e.Data, e.Owner)
}

// Is makes errors.Is(err, ErrNodeExists) true.
func (e *NodeExistsError) Is(target error) bool { return target == ErrNodeExists }

// CreateEphemeral creates the ephemeral node p holding data, creating missing
// parents as persistent nodes (0.7's createEphemeralPathExpectConflict). If p
// exists and this session owns it (a create whose reply was lost to a
// connection loss), it succeeds; if another session owns it, it returns a
// *NodeExistsError.
//
// Deviation: 0.7 also accepted a node of another session holding the same
// data; comparing the owning session is exact and cannot let two processes
// with the same configured id both believe they own a node.
func (c *Conn) CreateEphemeral(p string, data []byte) error {
	return c.createEphemeral(p, data, "")
}

// createEphemeral is CreateEphemeral that, when touch is not "", also
// sets the data of the persistent node touch to nothing in the same
// transaction (a ZooKeeper multi), moving its version: a write guarded by
// touch's version (guard) made by someone who read it before fails once
// the node was created.
func (c *Conn) createEphemeral(p string, data []byte, touch string) error {
	full, err := c.full(p)
	if err != nil {
		return err
	}
	create := func() error {
		if touch == "" {
			_, err := c.zk.Create(full, data, zk.FlagEphemeral, acl)
			return err
		}
		touchFull, err := c.full(touch)
		if err != nil {
			return err
		}
		res, err := c.zk.Multi(&zk.CreateRequest{Path: full, Data: data, Acl: acl, Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: touchFull, Data: nil, Version: -1})
		return multiErr(res, err)
	}
	for attempt := 0; ; attempt++ {
		err = create()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode) && attempt < 3:
			if err := c.createParents(full); err != nil {
				return err
			}
			continue
		case errors.Is(err, zk.ErrNodeExists):
			stored, stat, gerr := c.zk.Get(full)
			if errors.Is(gerr, zk.ErrNoNode) && attempt < 3 {
				continue // deleted meanwhile; try again
			}
			if gerr != nil {
				return c.wrap("get", p, gerr)
			}
			if stat.EphemeralOwner != 0 && stat.EphemeralOwner == c.zk.SessionID() {
				if string(stored) == string(data) {
					return nil
				}
				_, err := c.zk.Set(full, data, stat.Version)
				return c.wrap("set", p, err)
			}
			return &NodeExistsError{Path: p, Data: stored, Owner: stat.EphemeralOwner}
		default:
			return c.wrap("create ephemeral", p, err)
		}
	}
}

// EnsurePath creates p and its missing parents as empty persistent nodes
// (0.7's makeSurePersistentPathExists).
func (c *Conn) EnsurePath(p string) error {
	full, err := c.full(p)
	if err != nil {
		return err
	}
	if err := c.createParents(full); err != nil {
		return err
	}
	_, err = c.zk.Create(full, nil, 0, acl)
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return c.wrap("create", p, err)
}

// SetPersistent writes data to the persistent node p, creating it and its
// parents when missing (0.7's updatePersistentPath).
func (c *Conn) SetPersistent(p string, data []byte) error {
	full, err := c.full(p)
	if err != nil {
		return err
	}
	for attempt := 0; attempt < 4; attempt++ {
		_, err = c.zk.Set(full, data, -1)
		if !errors.Is(err, zk.ErrNoNode) {
			return c.wrap("set", p, err)
		}
		if err := c.createParents(full); err != nil {
			return err
		}
		_, err = c.zk.Create(full, data, 0, acl)
		if !errors.Is(err, zk.ErrNodeExists) {
			return c.wrap("create", p, err)
		}
		// Created by someone else meanwhile: set it.
	}
	return c.wrap("set", p, err)
}

// Delete removes the node p; a missing node is not an error.
func (c *Conn) Delete(p string) error {
	full, err := c.full(p)
	if err != nil {
		return err
	}
	err = c.zk.Delete(full, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return c.wrap("delete", p, err)
}

// DeleteOwned removes the ephemeral node p only if this session owns it, so
// that a process whose session expired cannot remove a node that another
// process has created since. It reports whether it deleted the node.
func (c *Conn) DeleteOwned(p string) (bool, error) { return c.DeleteOwnedBy(p, c.zk.SessionID()) }

// DeleteOwnedBy removes the ephemeral node p only if session owner owns
// it, and reports whether it did.
func (c *Conn) DeleteOwnedBy(p string, owner int64) (bool, error) {
	full, err := c.full(p)
	if err != nil {
		return false, err
	}
	_, stat, err := c.zk.Get(full)
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, c.wrap("get", p, err)
	}
	if owner == 0 || stat.EphemeralOwner != owner {
		return false, nil
	}
	err = c.zk.Delete(full, stat.Version)
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		return false, nil
	}
	return err == nil, c.wrap("delete", p, err)
}

// DeleteAll removes p and everything below it; a missing node is not an error.
func (c *Conn) DeleteAll(p string) error {
	full, err := c.full(p)
	if err != nil {
		return err
	}
	return c.deleteTree(full)
}

func (c *Conn) deleteTree(full string) error {
	for attempt := 0; ; attempt++ {
		names, _, err := c.zk.Children(full)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return c.wrap("children", full, err)
		}
		for _, n := range names {
			if err := c.deleteTree(full + "/" + n); err != nil {
				return err
			}
		}
		err = c.zk.Delete(full, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if !errors.Is(err, zk.ErrNotEmpty) || attempt >= 10 {
			return c.wrap("delete", full, err)
		}
		// A child was created meanwhile: delete again.
	}
}

// createParents creates the missing ancestors of the server path full.
func (c *Conn) createParents(full string) error {
	i := strings.LastIndexByte(full, '/')
	if i <= 0 {
		return nil
	}
	parent := full[:i]
	_, err := c.zk.Create(parent, nil, 0, acl)
	switch {
	case err == nil, errors.Is(err, zk.ErrNodeExists):
		return nil
	case errors.Is(err, zk.ErrNoNode):
		if err := c.createParents(parent); err != nil {
			return err
		}
		_, err = c.zk.Create(parent, nil, 0, acl)
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
	}
	return c.wrap("create", parent, err)
}

// GetVersion returns the data of the node at p and its version, for a later
// conditional write.
func (c *Conn) GetVersion(p string) ([]byte, int32, error) {
	data, version, _, err := c.GetWritten(p)
	return data, version, err
}

// GetWritten is GetVersion that also returns the zxid of the node's last
// write (its mzxid).
func (c *Conn) GetWritten(p string) ([]byte, int32, int64, error) {
	full, err := c.full(p)
	if err != nil {
		return nil, 0, 0, err
	}
	data, stat, err := c.zk.Get(full)
	if err != nil {
		return nil, 0, 0, c.wrap("get", p, err)
	}
	return data, stat.Version, stat.Mzxid, nil
}

// WatchDataVersion is WatchData that also returns the node's version (-1
// when it does not exist).
func (c *Conn) WatchDataVersion(p string) ([]byte, int32, bool, error) {
	data, ok, err := c.WatchData(p)
	if err != nil || !ok {
		return nil, -1, ok, err
	}
	// Re-read for the version: the watch armed above covers any change
	// after this read too.
	data2, v, err := c.GetVersion(p)
	if errors.Is(err, ErrNoNode) {
		return nil, -1, false, nil
	}
	if err != nil {
		return data, -1, true, err
	}
	return data2, v, true, nil
}

// CreatePersistent creates the persistent node p holding data, creating
// missing parents. If p exists it fails with an error wrapping ErrNodeExists.
func (c *Conn) CreatePersistent(p string, data []byte) error {
	full, err := c.full(p)
	if err != nil {
		return err
	}
	_, err = c.zk.Create(full, data, 0, acl)
	if errors.Is(err, zk.ErrNoNode) {
		if err := c.createParents(full); err != nil {
			return err
		}
		_, err = c.zk.Create(full, data, 0, acl)
	}
	return c.wrap("create", p, err)
}

// SetIfVersion writes data to p only if the node is still at version (a
// compare-and-set); it returns the new version. A node changed meanwhile
// gives an error wrapping ErrBadVersion; a missing one ErrNoNode.
func (c *Conn) SetIfVersion(p string, data []byte, version int32) (int32, error) {
	full, err := c.full(p)
	if err != nil {
		return 0, err
	}
	stat, err := c.zk.Set(full, data, version)
	if err != nil {
		return 0, c.wrap("set", p, err)
	}
	return stat.Version, nil
}

// guard is a condition of a guarded write: the node Path still at
// Version. A write whose guard no longer holds writes nothing and fails
// with an error wrapping Err.
type guard struct {
	Path    string
	Version int32
	Err     error
}

// setIfVersionGuarded is SetIfVersion done only while every guard holds,
// in one transaction (a ZooKeeper multi with a check of each).
func (c *Conn) setIfVersionGuarded(guards []guard, p string, data []byte, version int32) (int32, error) {
	full, err := c.full(p)
	if err != nil {
		return 0, err
	}
	res, err := c.guarded(guards, &zk.SetDataRequest{Path: full, Data: data, Version: version})
	if err != nil {
		return 0, c.wrap("set", p, err)
	}
	return res.Stat.Version, nil
}

// createPersistentGuarded is CreatePersistent done only while every guard
// holds (see setIfVersionGuarded).
func (c *Conn) createPersistentGuarded(guards []guard, p string, data []byte) error {
	full, err := c.full(p)
	if err != nil {
		return err
	}
	if err := c.createParents(full); err != nil {
		return err
	}
	_, err = c.guarded(guards, &zk.CreateRequest{Path: full, Data: data, Acl: acl})
	return c.wrap("create", p, err)
}

// guarded runs op in a multi after a check of each guard, and returns op's
// response. A failed check is its guard's Err; a failed op its own error.
func (c *Conn) guarded(guards []guard, op any) (zk.MultiResponse, error) {
	ops := make([]any, 0, len(guards)+1)
	for _, g := range guards {
		full, err := c.full(g.Path)
		if err != nil {
			return zk.MultiResponse{}, err
		}
		ops = append(ops, &zk.CheckVersionRequest{Path: full, Version: g.Version})
	}
	ops = append(ops, op)
	res, err := c.zk.Multi(ops...)
	if len(res) == len(ops) {
		for i, g := range guards {
			if res[i].Error != nil && !errors.Is(res[i].Error, zk.ErrAPIError) {
				return res[len(guards)], fmt.Errorf("%w: %s is no longer at version %d (%v)", g.Err, g.Path, g.Version, res[i].Error)
			}
		}
		if e := res[len(guards)].Error; e != nil {
			return res[len(guards)], e
		}
	}
	if err != nil {
		return zk.MultiResponse{}, err
	}
	return res[len(guards)], nil
}

// multiErr is the error of the op that failed a multi (the others report
// ErrAPIError), or the multi's own.
func multiErr(res []zk.MultiResponse, err error) error {
	for _, r := range res {
		if r.Error != nil && !errors.Is(r.Error, zk.ErrAPIError) {
			return r.Error
		}
	}
	return err
}

// DeleteIfVersion removes the node p only if its version is still version
// (ErrBadVersion otherwise; a missing node is ErrNoNode).
func (c *Conn) DeleteIfVersion(p string, version int32) error {
	full, err := c.full(p)
	if err != nil {
		return err
	}
	return c.wrap("delete", p, c.zk.Delete(full, version))
}
