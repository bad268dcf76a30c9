package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// lateCancel is a context whose Err says cancelled from its n-th call on: a signal that
// arrives while a listing is under way, at a point a test can name.
type lateCancel struct {
	context.Context
	n     int32
	calls atomic.Int32
}

func (c *lateCancel) Err() error {
	if c.calls.Add(1) >= c.n {
		return context.Canceled
	}
	return nil
}

// Listing a directory of thousands of files stats each one: a signal during it stops it there,
// not after the last stat (300,000 batch files took seconds after SIGTERM).
func TestLocalListingStopsAtSignal(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "offsets"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		if err := os.WriteFile(filepath.Join(dir, "offsets", fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The call that starts the listing finds the context live; a later look finds it cancelled.
	if es, err := l.List(&lateCancel{Context: context.Background(), n: 3}, "offsets"); !errors.Is(err, context.Canceled) {
		t.Errorf("List: %d entries, %v; want context.Canceled", len(es), err)
	}
	if es, _, err := l.WalkLinks(&lateCancel{Context: context.Background(), n: 3}, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("WalkLinks: %d entries, %v; want context.Canceled", len(es), err)
	}
}
