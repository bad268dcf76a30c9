// Package liveness is the record `ckpt run` keeps in a checkpoint while it runs, so that commands
// which change the checkpoint (repair, offsets reset, rewind, undo) know at once whether the
// engine that writes it is alive, instead of waiting for its files to age.
//
// The record is _ckpt/run.json: host, pid, start, heartbeat, and, once the engine stops cleanly,
// the stop time. Stores never overwrite a file, so each heartbeat deletes the record and writes
// it again; a reader that falls into that gap sees no record and uses the file-age window, the
// answer for checkpoints Spark writes.
package liveness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Path is the record's place in the checkpoint, beside repair's journals (Spark never reads _ckpt/).
const Path = "_ckpt/run.json"

// DefaultInterval is how often a running engine refreshes its heartbeat.
const DefaultInterval = 10 * time.Second

// Record is the content of Path.
type Record struct {
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Start     time.Time `json:"start"`
	Heartbeat time.Time `json:"heartbeat"`
	// Interval is the heartbeat period, so a reader on another host knows when it is stale.
	Interval time.Duration `json:"intervalNs"`
	// Stopped is set when the engine stopped cleanly.
	Stopped *time.Time `json:"stopped,omitempty"`
	Tool    string     `json:"tool"`
	// Sink is the query's sink format (kafka, parquet, console, …): rewind refuses to re-send to
	// a Kafka sink.
	Sink string `json:"sink,omitempty"`
}

// Read returns the record, or nil when there is none.
func Read(ctx context.Context, s Reader) (*Record, error) {
	var data []byte
	var err error
	if st, ok := s.(storage.Store); ok {
		data, err = checkpoint.ReadCapped(ctx, st, Path) // a bare store's ReadFile has no cap
	} else {
		data, err = s.ReadFile(ctx, Path) // the checkpoint view caps its reads
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("unreadable liveness record %s: %w", Path, err)
	}
	return &r, nil
}

// Reader reads a file: a storage.Store, or a checkpoint.Checkpoint, which reads the record once for
// every check of one command (rewind's sink detection, then its liveness warning).
type Reader interface {
	ReadFile(ctx context.Context, path string) ([]byte, error)
}

// State is what a record says about the engine.
type State int

// The states.
const (
	// Unknown: the record cannot tell (another host's stale heartbeat is Dead; a live pid whose
	// heartbeat stopped may be a reused pid). Callers fall back to the file-age window.
	Unknown State = iota
	Alive
	Dead
)

// Verdict is the judgement of a record.
type Verdict struct {
	State State
	// Since is when the engine last showed life (stop or heartbeat): a checkpoint file newer than
	// Since plus one interval was written by someone else.
	Since time.Time
	// Reason says how it was decided, for messages.
	Reason string
}

// Judge decides whether r's engine is alive at now. On the local host the pid decides; elsewhere
// the heartbeat's age (three intervals).
func Judge(r *Record, now time.Time, localHost string) Verdict {
	interval := r.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	who := fmt.Sprintf("ckpt run (pid %d on %s, started %s)", r.PID, r.Host, r.Start.UTC().Format(time.RFC3339))
	if r.Stopped != nil {
		return Verdict{State: Dead, Since: *r.Stopped, Reason: who + " stopped at " + r.Stopped.UTC().Format(time.RFC3339)}
	}
	age := now.Sub(r.Heartbeat)
	if r.Host == localHost {
		if !processAlive(r.PID) {
			return Verdict{State: Dead, Since: r.Heartbeat, Reason: who + " is no longer running"}
		}
		if age < 3*interval {
			return Verdict{State: Alive, Since: r.Heartbeat, Reason: fmt.Sprintf("%s is running (heartbeat %s ago)", who, age.Round(time.Second))}
		}
		return Verdict{State: Unknown, Since: r.Heartbeat, Reason: fmt.Sprintf("%s: pid %d exists but its heartbeat is %s old", who, r.PID, age.Round(time.Second))}
	}
	if age < 3*interval {
		return Verdict{State: Alive, Since: r.Heartbeat, Reason: fmt.Sprintf("%s beat %s ago", who, age.Round(time.Second))}
	}
	return Verdict{State: Dead, Since: r.Heartbeat, Reason: fmt.Sprintf("%s last beat %s ago", who, age.Round(time.Second))}
}

// Options configure Hold.
type Options struct {
	Tool string
	Sink string
	// Interval is the heartbeat period (default DefaultInterval); Now the clock (default time.Now).
	Interval time.Duration
	Now      func() time.Time
}

// Holder keeps the record of a running engine fresh until Release.
type Holder struct {
	s    storage.Store
	rec  Record
	now  func() time.Time
	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

// Hold writes the record (replacing a dead engine's) and refreshes it every interval until
// Release.
func Hold(ctx context.Context, s storage.Store, o Options) (*Holder, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	host, _ := os.Hostname()
	now := o.Now().UTC()
	h := &Holder{s: s, now: o.Now, stop: make(chan struct{}), done: make(chan struct{}),
		rec: Record{Host: host, PID: os.Getpid(), Start: now, Heartbeat: now, Interval: o.Interval, Tool: o.Tool, Sink: o.Sink}}
	// A record write interrupted by kill -9 leaves the local store's temporary file behind.
	if es, err := s.List(ctx, path.Dir(Path)); err == nil {
		for _, e := range es {
			if n := path.Base(e.Path); !e.IsDir && strings.HasPrefix(n, "."+path.Base(Path)+".") && strings.HasSuffix(n, ".tmp") {
				_ = s.Delete(ctx, e.Path)
			}
		}
	}
	if err := h.write(ctx); err != nil {
		return nil, err
	}
	go h.beat(context.WithoutCancel(ctx), o.Interval)
	return h, nil
}

func (h *Holder) beat(ctx context.Context, every time.Duration) {
	defer close(h.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			h.mu.Lock()
			h.rec.Heartbeat = h.now().UTC()
			_ = h.write(ctx) // a missed beat only makes the record look older
			h.mu.Unlock()
		}
	}
}

func (h *Holder) write(ctx context.Context) error {
	data, err := json.MarshalIndent(h.rec, "", "  ")
	if err != nil {
		return err
	}
	if err := h.s.Delete(ctx, Path); err != nil {
		return fmt.Errorf("refresh the liveness record: %w", err)
	}
	if err := h.s.WriteFile(ctx, Path, append(data, '\n')); err != nil {
		return fmt.Errorf("write the liveness record: %w", err)
	}
	return nil
}

// Release stops the heartbeat and records the clean stop.
func (h *Holder) Release(ctx context.Context) error {
	close(h.stop)
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.now().UTC()
	h.rec.Stopped, h.rec.Heartbeat = &t, t
	return h.write(ctx)
}
