package experiments

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/netdb11/kafka/broker/brokertest/wait"
	"github.com/netdb11/kafka/experiments/machine"
)

// The run's context ending (SIGINT, SIGTERM) puts the writeback settings
// back at once, before Run's deferred restore, which then writes nothing
// more (issue 14's --dirty-bytes).
func TestLimitDirtyBytesRestoresOnCancel(t *testing.T) {
	dir := t.TempDir()
	for name, v := range map[string]string{"dirty_ratio": "20", "dirty_background_ratio": "10", "dirty_bytes": "0", "dirty_background_bytes": "0"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func() machine.Writeback {
		t.Helper()
		w, err := machine.ReadWriteback(dir)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	restore, err := limitDirtyBytes(ctx, dir, 256<<20, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if w := read(); w.Bytes != 256<<20 || w.BackgroundBytes != 64<<20 {
		t.Fatalf("during the run: %+v, want 256 MiB and 64 MiB", w)
	}
	// The kernel zeroes the ratios when the byte counts are written.
	for _, name := range []string{"dirty_ratio", "dirty_background_ratio"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	// No call to restore yet: the context's end alone puts them back.
	wait.For(t, "the writeback settings restored on cancel", func() bool {
		w, err := machine.ReadWriteback(dir)
		return err == nil && w.Ratio == 20 && w.BackgroundRatio == 10
	})
	// Run's deferred restore waits for that one to end and writes nothing
	// more (sync.OnceFunc).
	restore()
	if err := os.WriteFile(filepath.Join(dir, "dirty_ratio"), []byte("33\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	restore()
	if w := read(); w.Ratio != 33 {
		t.Fatalf("a second restore wrote the settings again: %+v", w)
	}
}
