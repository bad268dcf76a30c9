package journal

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ckpt-dev/ckpt/internal/progress"
)

// phase is one long step of a run (checking, backing up, applying, verifying, restoring) on the
// progress line: its own label with done/total, the rate and the time left, as restic shows
// them. It is the whole status line (Meter.Status): the meter's own counters, the listing's and
// the plan's reads, would follow it as stale figures ("applying 1/400: listed 1,600 · read
// 400/400").
type phase struct {
	mu    sync.Mutex // add is called by the workers of a parallel step
	m     *progress.Meter
	label string
	total int
	done  int
	start time.Time
	next  time.Time
}

// newPhase starts a phase of total units (0: unknown) on ctx's meter; without one it does nothing.
func newPhase(ctx context.Context, label string, total int) *phase {
	m := progress.From(ctx)
	if m == nil {
		return nil
	}
	p := &phase{m: m, label: label, total: total, start: time.Now()}
	m.Status(p.text(p.start))
	return p
}

func (p *phase) add(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if now := time.Now(); !now.Before(p.next) {
		p.next = now.Add(200 * time.Millisecond)
		p.m.Status(p.text(now))
	}
}

// text is "applying 1,200/40,000 · 3,400/s · 11s left".
func (p *phase) text(now time.Time) string {
	if p.total <= 0 {
		return p.label
	}
	s := fmt.Sprintf("%s %s/%s", p.label, group(p.done), group(p.total))
	el := now.Sub(p.start).Seconds()
	if p.done > 0 && el >= 0.5 {
		rate := float64(p.done) / el
		left := time.Duration(float64(p.total-p.done) / rate * float64(time.Second)).Round(time.Second)
		s += fmt.Sprintf(" · %s/s · %s left", group(int(rate)), left)
	}
	return s
}

// end shows the phase as finished.
func (p *phase) end() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done < 0 {
		return
	}
	if p.total > 0 {
		p.done = p.total
	}
	p.m.Status(p.text(time.Now()))
	p.done = -1
}

// group writes n with thousands separators.
func group(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
