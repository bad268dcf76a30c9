// Package progress draws one status line for long work (listing and reading many files, a deep
// check, a repair) on a terminal's stderr: a spinner and counters, rewritten in place with \r,
// throttled, and erased when the work ends so that nothing of it stays in the scrollback.
//
// The code doing the work does not know whether anybody watches: it counts through the context
// (Add(ctx, Read, 1)), which holds a Meter only when the command decided to show progress (a
// terminal on stdout and stderr, table output). Without one, Add is a context lookup and nothing
// else. The package imports only the standard library, so storage can count its listings.
package progress

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is what a counter counts.
type Kind int

// The counters a Meter shows, in this order.
const (
	// Listed counts names returned by directory listings (storage.EachName, S3 pages).
	Listed Kind = iota
	// Read counts files read (storage.ReadMany).
	Read
	// Done counts units of a command's own work (repair actions, purged files, checkpoints).
	Done
	nKinds
)

var kindWords = [nKinds]string{"listed", "read", "done"}

// Options tune a Meter. The zero value is the default.
type Options struct {
	// Delay is how long the work runs before the line first appears, so that quick commands
	// never flash it. Default 250ms; negative: at once.
	Delay time.Duration
	// Every is the least time between two redraws. Default 100ms.
	Every time.Duration
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
}

// Meter counts and draws. A nil *Meter does nothing, so callers need no checks.
type Meter struct {
	w     io.Writer
	delay time.Duration
	every time.Duration
	now   func() time.Time
	start time.Time

	counts [nKinds]atomic.Int64
	totals [nKinds]atomic.Int64
	// next is the earliest time (UnixNano) of the next redraw: Add reads it without the lock.
	next atomic.Int64

	mu    sync.Mutex
	stage string
	bare  bool // the stage is the whole line (Status): no counters after it
	spin  int
	shown int // width of the line on screen, 0 when none
	ended bool
}

// New returns a meter drawing on w (a terminal's stderr).
func New(w io.Writer, o Options) *Meter {
	if o.Delay == 0 {
		o.Delay = 250 * time.Millisecond
	}
	if o.Delay < 0 {
		o.Delay = 0
	}
	if o.Every <= 0 {
		o.Every = 100 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m := &Meter{w: w, delay: o.Delay, every: o.Every, now: o.Now}
	m.start = o.Now()
	m.next.Store(m.start.Add(o.Delay).UnixNano())
	return m
}

// Stage names the work under way ("reading offsets"); counters keep running across stages.
func (m *Meter) Stage(label string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	changed := m.stage != label || m.bare
	m.stage, m.bare = label, false
	m.mu.Unlock()
	// A new stage shows at once (once the delay is over): the throttle is for counters.
	if changed {
		m.redraw()
	}
}

// Status shows text as the whole line, without the counters: a phase that counts its own work
// ("applying 1,200/40,000 · 3,400/s · 11s left"), after which the listing's and the reads'
// totals would read as stale figures of the phase. The next Stage shows the counters again.
func (m *Meter) Status(text string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	changed := m.stage != text || !m.bare
	m.stage, m.bare = text, true
	m.mu.Unlock()
	if changed {
		m.redraw()
	}
}

// Add counts n more of kind.
func (m *Meter) Add(k Kind, n int) {
	if m == nil {
		return
	}
	m.counts[k].Add(int64(n))
	m.tick()
}

// Total announces how many of kind the work will count in all (0: unknown), shown as N/total.
func (m *Meter) Total(k Kind, n int) {
	if m == nil {
		return
	}
	m.totals[k].Store(int64(n))
}

// Expect raises the total of kind to at least what is counted so far plus n: a caller reading
// n more files announces them without lowering a total set by the work around it.
func (m *Meter) Expect(k Kind, n int) {
	if m == nil {
		return
	}
	want := m.counts[k].Load() + int64(n)
	for {
		t := m.totals[k].Load()
		if t >= want {
			return
		}
		if m.totals[k].CompareAndSwap(t, want) {
			break
		}
	}
	m.redraw() // a new total shows at once, as a new stage does
}

// redraw draws now, ignoring the throttle but not the delay.
func (m *Meter) redraw() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ended && !m.now().Before(m.start.Add(m.delay)) {
		m.next.Store(m.now().Add(m.every).UnixNano())
		m.draw()
	}
}

// Count is the current value of a counter.
func (m *Meter) Count(k Kind) int64 {
	if m == nil {
		return 0
	}
	return m.counts[k].Load()
}

func (m *Meter) tick() {
	if m.now().UnixNano() < m.next.Load() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.ended || now.UnixNano() < m.next.Load() {
		return
	}
	m.next.Store(now.Add(m.every).UnixNano())
	m.draw()
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Line is the status text without the spinner (tests).
func (m *Meter) Line() string {
	if m.bare {
		return m.stage
	}
	var parts []string
	for k := range nKinds {
		n, t := m.counts[k].Load(), m.totals[k].Load()
		if n == 0 && t == 0 {
			continue
		}
		p := kindWords[k] + " " + group(n)
		if t > 0 {
			p += "/" + group(t)
		}
		parts = append(parts, p)
	}
	s := strings.Join(parts, " · ")
	if m.stage != "" {
		if s != "" {
			s = m.stage + ": " + s
		} else {
			s = m.stage + "…"
		}
	}
	return s
}

// draw rewrites the line: \r, the text, and spaces over what a longer previous line left.
func (m *Meter) draw() {
	text := spinner[m.spin%len(spinner)] + " " + m.Line()
	m.spin++
	w := len([]rune(text))
	pad := ""
	if m.shown > w {
		pad = strings.Repeat(" ", m.shown-w)
	}
	fmt.Fprintf(m.w, "\r%s%s", text, pad)
	m.shown = w
}

// End erases the line, if one was drawn, and stops drawing. Output that follows starts at the
// beginning of a clean line.
func (m *Meter) End() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shown > 0 {
		fmt.Fprintf(m.w, "\r%s\r", strings.Repeat(" ", m.shown))
		m.shown = 0
	}
	m.ended = true
}

// Pause erases the line so that the caller can write to the terminal (a prompt, a result); the
// next count draws it again.
func (m *Meter) Pause() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shown > 0 {
		fmt.Fprintf(m.w, "\r%s\r", strings.Repeat(" ", m.shown))
		m.shown = 0
	}
}

// group writes n with thousands separators: 100,000 reads faster than 100000.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	lead := len(s) % 3
	if lead > 0 {
		b.WriteString(s[:lead])
	}
	for i := lead; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

type ctxKey struct{}

// With returns ctx carrying m; the work below counts into it.
func With(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, ctxKey{}, m)
}

// From returns the meter ctx carries, or nil.
func From(ctx context.Context) *Meter {
	if ctx == nil {
		return nil
	}
	m, _ := ctx.Value(ctxKey{}).(*Meter)
	return m
}

// Add counts n of kind on the meter ctx carries, if any.
func Add(ctx context.Context, k Kind, n int) { From(ctx).Add(k, n) }

// Stage names the work under way on the meter ctx carries, if any.
func Stage(ctx context.Context, label string) { From(ctx).Stage(label) }
