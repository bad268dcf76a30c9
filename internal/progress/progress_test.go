package progress

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestMeterWaitsThrottlesAndErases(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	var b bytes.Buffer
	m := New(&b, Options{Delay: time.Second, Every: 100 * time.Millisecond, Now: c.now})
	m.Stage("reading offsets")
	m.Total(Read, 3000)
	m.Add(Read, 10)
	if b.Len() != 0 {
		t.Fatalf("drawn before the delay: %q", b.String())
	}
	c.t = c.t.Add(time.Second)
	m.Add(Read, 1990)
	if !strings.Contains(b.String(), "\rreading offsets: read 2,000/3,000") && !strings.Contains(b.String(), "reading offsets: read 2,000/3,000") {
		t.Fatalf("first draw: %q", b.String())
	}
	n := b.Len()
	m.Add(Read, 1) // within Every: no redraw
	if b.Len() != n {
		t.Fatalf("redrawn within the throttle: %q", b.String())
	}
	c.t = c.t.Add(200 * time.Millisecond)
	m.Add(Listed, 5)
	if !strings.Contains(b.String()[n:], "listed 5 · read 2,001/3,000") {
		t.Fatalf("second draw: %q", b.String()[n:])
	}
	m.End()
	out := b.String()
	if !strings.HasSuffix(out, "\r") || !strings.Contains(out, "\r"+strings.Repeat(" ", 10)) {
		t.Fatalf("line not erased: %q", out)
	}
	n = b.Len()
	c.t = c.t.Add(time.Second)
	m.Add(Read, 1)
	if b.Len() != n {
		t.Fatalf("drawn after End: %q", b.String()[n:])
	}
}

func TestNilMeterAndContextWithoutOne(t *testing.T) {
	var m *Meter
	m.Add(Read, 1)
	m.Stage("x")
	m.End()
	Add(context.Background(), Read, 1)
	ctx := With(context.Background(), New(&bytes.Buffer{}, Options{}))
	Add(ctx, Read, 2)
	if From(ctx).Count(Read) != 2 {
		t.Fatal("count through the context lost")
	}
}

func TestGroup(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 100000: "100,000", 1234567: "1,234,567"} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestMeterConcurrent counts from many goroutines, as storage.ReadMany does (run with -race).
func TestMeterConcurrent(t *testing.T) {
	var b bytes.Buffer
	m := New(&b, Options{Delay: -1, Every: time.Nanosecond})
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 1000 {
				m.Add(Read, 1)
				if i%100 == 0 {
					m.Stage("stage " + string(rune('a'+g)))
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	m.End()
	if m.Count(Read) != 8000 {
		t.Fatalf("counted %d", m.Count(Read))
	}
}

// A phase that counts its own work is the whole line: the listing's and the plan's counters
// after it read as stale figures of the phase ("applying 1/400: listed 1,600 · read 400/400",
// issue 25). The next Stage shows them again.
func TestStatusHidesCounters(t *testing.T) {
	m := New(&bytes.Buffer{}, Options{Delay: -1})
	m.Stage("listing commits/")
	m.Add(Listed, 1600)
	m.Total(Read, 400)
	m.Add(Read, 400)
	m.Status("applying 1/400 · 2/s · 3m20s left")
	if got := m.Line(); got != "applying 1/400 · 2/s · 3m20s left" {
		t.Errorf("status line %q, want the phase alone", got)
	}
	m.Stage("listing offsets/")
	if got := m.Line(); got != "listing offsets/: listed 1,600 · read 400/400" {
		t.Errorf("after Stage: %q", got)
	}
}
