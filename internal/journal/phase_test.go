package journal

import (
	"testing"
	"time"
)

// A long phase shows done/total, its rate and the time left once it has run half a second
// (restic's status), and only done/total before: a rate over a few milliseconds says nothing.
func TestPhaseText(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := &phase{label: "applying", total: 40000, done: 1200, start: t0}
	if got, want := p.text(t0.Add(100*time.Millisecond)), "applying 1,200/40,000"; got != want {
		t.Errorf("at 0.1 s: %q, want %q", got, want)
	}
	if got, want := p.text(t0.Add(500*time.Millisecond)), "applying 1,200/40,000 · 2,400/s · 16s left"; got != want {
		t.Errorf("at 0.5 s: %q, want %q", got, want)
	}
	p = &phase{label: "verifying", start: t0}
	if got := p.text(t0.Add(time.Second)); got != "verifying" {
		t.Errorf("a phase of unknown size: %q", got)
	}
}
