package faults

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// segment is one segment file of a partition directory.
type segment struct {
	path  string
	start int64
	size  int64
}

// segments lists a partition directory's segment files in offset order.
func segments(dir string) ([]segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []segment
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".kafka")
		if !ok || e.IsDir() {
			continue
		}
		start, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		out = append(out, segment{filepath.Join(dir, e.Name()), start, fi.Size()})
	}
	slices.SortFunc(out, func(a, b segment) int { return int(min(max(a.start-b.start, -1), 1)) })
	return out, nil
}

// partitionDir is the directory of topic-partition in a broker's log.dir.
func partitionDir(logDir, topic string, partition int32) string {
	return filepath.Join(logDir, fmt.Sprintf("%s-%d", topic, partition))
}

// truncateTo cuts a partition's log to end at offset: the disk "loses"
// everything after it. Segments starting at or after offset are removed.
// The log must not be open (its broker is dead). It returns how many bytes
// were cut.
func truncateTo(dir string, offset int64) (int64, error) {
	segs, err := segments(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	var cut int64
	for _, s := range segs {
		switch {
		case s.start+s.size <= offset:
		case s.start >= offset && s.start > 0:
			cut += s.size
			if err := os.Remove(s.path); err != nil {
				return cut, err
			}
		default:
			keep := max(offset-s.start, 0)
			cut += s.size - keep
			if err := os.Truncate(s.path, keep); err != nil {
				return cut, err
			}
		}
	}
	// A clean-shutdown marker would let the broker skip recovery.
	if err := os.Remove(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return cut, err
	}
	return cut, nil
}

// hashTo returns the sha256 of a partition's log bytes [start, end), with
// the segments laid end to end, or an error when the log holds fewer bytes.
func hashTo(dir string, end int64) (string, error) {
	segs, err := segments(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	var n int64
	for _, s := range segs {
		if n >= end {
			break
		}
		f, err := os.Open(s.path)
		if err != nil {
			return "", err
		}
		m, err := io.Copy(h, io.LimitReader(f, end-n))
		f.Close()
		if err != nil {
			return "", err
		}
		n += m
	}
	if n < end {
		return "", &shortError{dir, n, end}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// shortError is hashTo's answer for a log that ends before the end asked
// for: a replica short of what the readers read.
type shortError struct {
	dir       string
	held, end int64
}

func (e *shortError) Error() string {
	return fmt.Sprintf("faults: %s holds %d bytes, fewer than %d", e.dir, e.held, e.end)
}
