package replica

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// EpochsFile is the name of a partition's leader-epoch file, kept in the
// partition's log directory beside the segments (the log ignores it).
const EpochsFile = "leader-epoch-checkpoint"

// epochsVersion is the first line of the file.
const epochsVersion = 0

// UndefinedEpoch is the answer to an OffsetForLeaderEpoch request for an
// epoch older than every epoch the leader knows.
const UndefinedEpoch int32 = -1

// EpochEntry says that messages from offset Start on were written by the
// leader of epoch Epoch (up to the next entry's start).
type EpochEntry struct {
	Epoch int32
	Start Offset
}

// ErrBadEpochsFile means a leader-epoch file does not parse.
var ErrBadEpochsFile = errors.New("replica: bad leader-epoch file")

// Epochs is a partition's durable list of (leader epoch, start offset)
// pairs, KIP-101's leader-epoch cache: epochs and starts both strictly
// increase. Every change is written to disk before the call returns, crash
// safely (write a temporary file, fsync, rename over the old one, fsync the
// directory), so after a crash the file holds either the old or the new list.
//
// The file is text, as Kafka's checkpoint files:
//
//	0                  version
//	2                  number of entries
//	0 0                epoch start
//	3 104857           epoch start
//
// Safe for concurrent use.
type Epochs struct {
	path string

	mu      sync.Mutex
	entries []EpochEntry // guarded by mu
}

// OpenEpochs reads the leader-epoch file at path; a missing file is an empty
// list.
func OpenEpochs(path string) (*Epochs, error) {
	e := &Epochs{path: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return e, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	e.entries, err = parseEpochs(data)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrBadEpochsFile, path, err)
	}
	return e, nil
}

func parseEpochs(data []byte) ([]EpochEntry, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	v, ok := line()
	if !ok || v != strconv.Itoa(epochsVersion) {
		return nil, fmt.Errorf("version line %q, want %d", v, epochsVersion)
	}
	c, _ := line()
	n, err := strconv.Atoi(c)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("count line %q", c)
	}
	var out []EpochEntry
	for i := 0; i < n; i++ {
		l, ok := line()
		if !ok {
			return nil, fmt.Errorf("%d entries, %d promised", i, n)
		}
		es, ss, ok := strings.Cut(l, " ")
		ep, err1 := strconv.ParseInt(es, 10, 32)
		st, err2 := strconv.ParseInt(ss, 10, 64)
		if !ok || err1 != nil || err2 != nil || ep < 0 || st < 0 {
			return nil, fmt.Errorf("entry %q", l)
		}
		en := EpochEntry{Epoch: int32(ep), Start: Offset(st)}
		if k := len(out); k > 0 && (en.Epoch <= out[k-1].Epoch || en.Start < out[k-1].Start) {
			return nil, fmt.Errorf("entry %q out of order", l)
		}
		out = append(out, en)
	}
	if l, ok := line(); ok && l != "" {
		return nil, fmt.Errorf("trailing %q", l)
	}
	return out, nil
}

// Entries returns a copy of the list.
func (e *Epochs) Entries() []EpochEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]EpochEntry(nil), e.entries...)
}

// Latest returns the newest entry, if any.
func (e *Epochs) Latest() (EpochEntry, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.entries) == 0 {
		return EpochEntry{}, false
	}
	return e.entries[len(e.entries)-1], true
}

// Assign records that epoch starts at start: what a new leader does with its
// log end when it takes over, and what a follower does when it first appends
// bytes of that epoch. An epoch at or below the latest is ignored (it is
// known already or stale). Entries starting at or after start are dropped
// first: their bytes were truncated.
func (e *Epochs) Assign(epoch int32, start Offset) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := e.entries
	for len(kept) > 0 && kept[len(kept)-1].Start > start {
		kept = kept[:len(kept)-1]
	}
	if k := len(kept); k > 0 && kept[k-1].Epoch >= epoch {
		if k == len(e.entries) {
			return nil
		}
		return e.storeLocked(kept)
	}
	if k := len(kept); k > 0 && kept[k-1].Start == start {
		kept = kept[:k-1] // the older epoch wrote nothing
	}
	return e.storeLocked(append(append([]EpochEntry(nil), kept...), EpochEntry{Epoch: epoch, Start: start}))
}

// TruncateFrom drops the entries whose epochs start at or after end: the
// log was truncated to end, so those epochs hold nothing any more.
func (e *Epochs) TruncateFrom(end Offset) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := len(e.entries)
	for n > 0 && e.entries[n-1].Start >= end {
		n--
	}
	if n == len(e.entries) {
		return nil
	}
	return e.storeLocked(append([]EpochEntry(nil), e.entries[:n]...))
}

// EndOffsetFor answers OffsetForLeaderEpoch for this replica (KIP-101, with
// KIP-279's refinement): the largest epoch at or below epoch that it knows,
// and that epoch's end offset: the start of the next epoch, or leo if it is
// the latest. For an epoch older than all it knows it answers
// (UndefinedEpoch, -1).
func (e *Epochs) EndOffsetFor(epoch int32, leo Offset) (int32, Offset) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.entries) - 1; i >= 0; i-- {
		if e.entries[i].Epoch <= epoch {
			if i == len(e.entries)-1 {
				return e.entries[i].Epoch, leo
			}
			return e.entries[i].Epoch, e.entries[i+1].Start
		}
	}
	return UndefinedEpoch, -1
}

// storeLocked writes entries to the file crash-safely, then adopts them.
func (e *Epochs) storeLocked(entries []EpochEntry) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", epochsVersion, len(entries))
	for _, en := range entries {
		fmt.Fprintf(&b, "%d %d\n", en.Epoch, en.Start)
	}
	if err := writeFileAtomic(e.path, b.Bytes()); err != nil {
		return err
	}
	e.entries = entries
	return nil
}

// writeFileAtomic replaces path with data: temporary file, fsync, rename,
// fsync of the directory.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("replica: write %s: %w", path, err), os.Remove(tmp))
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("replica: fsync directory of %s: %w", path, err)
	}
	return nil
}
