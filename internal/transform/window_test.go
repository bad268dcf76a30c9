package transform

import (
	"fmt"
	"testing"
	"time"
)

// TestTimeWindows: the windows of a row as TimeWindowing's Expand and Filter make them.
func TestTimeWindows(t *testing.T) {
	const s = int64(time.Second / time.Microsecond)
	for _, c := range []struct {
		size, slide, ts int64
		want            string
	}{
		{60 * s, 60 * s, 75 * s, "[[60 120]]"},
		{60 * s, 60 * s, 60 * s, "[[60 120]]"}, // a window is [start, end)
		{60 * s, 30 * s, 75 * s, "[[60 120] [30 90]]"},
		{60 * s, 30 * s, 60 * s, "[[60 120] [30 90]]"},
		// slide does not divide size: ceil(size/slide) candidates, those holding ts kept.
		{60 * s, 40 * s, 75 * s, "[[40 100]]"},
		{60 * s, 40 * s, 90 * s, "[[80 140] [40 100]]"},
		// before the epoch: the remainder is made positive.
		{60 * s, 60 * s, -15 * s, "[[-60 0]]"},
	} {
		w := &TimeWindow{Size: c.size, Slide: c.slide}
		var secs [][2]int64
		for _, x := range w.Windows(c.ts, nil) {
			secs = append(secs, [2]int64{x[0] / s, x[1] / s})
		}
		if got := fmt.Sprint(secs); got != c.want {
			t.Errorf("window(%ds, %ds) of %ds: %s, want %s", c.size/s, c.slide/s, c.ts/s, got, c.want)
		}
	}
}

func TestWindowString(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := Window{Start: t0, End: t0.Add(time.Minute + 1500*time.Microsecond)}
	if got := w.String(); got != "{2026-01-01 00:00:00, 2026-01-01 00:01:00.0015}" {
		t.Errorf("%s", got)
	}
}

func TestParseIntervalMicros(t *testing.T) {
	for in, want := range map[string]int64{"10 seconds": 10_000_000, "1 minute": 60_000_000, "interval 2 hours": 7_200_000_000,
		"1 minute 30 seconds": 90_000_000, "10s": 10_000_000, "1 day": 86_400_000_000, "5 milliseconds": 5000, "1 week": 604_800_000_000} {
		if got, err := ParseIntervalMicros(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ten seconds", "1 month", "5"} {
		if _, err := ParseIntervalMicros(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
