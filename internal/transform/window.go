// Time windows of a streaming aggregation: Spark's window(timeColumn, windowDuration[,
// slideDuration]) grouping expression (TimeWindow, rewritten by the analyzer's TimeWindowing).

package transform

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// KindWindow is the type of a window column: struct<start:timestamp,end:timestamp>.
const KindWindow Kind = KindHeaders + 1

// Window is the value of a window column, [Start, End).
type Window struct {
	Start, End time.Time
}

// String is the window as Spark's CAST(window AS STRING) renders it in a UTC session:
// "{2026-01-01 00:00:00, 2026-01-01 00:01:00}".
func (w Window) String() string {
	return "{" + SparkTimestamp(w.Start) + ", " + SparkTimestamp(w.End) + "}"
}

// SparkTimestamp renders t as Spark casts a timestamp to a string in UTC: seconds, then the
// fraction without trailing zeros when there is one.
func SparkTimestamp(t time.Time) string {
	t = t.UTC()
	s := t.Format("2006-01-02 15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += strings.TrimRight("."+fmt.Sprintf("%06d", us), "0")
	}
	return s
}

// TimeWindow is a compiled window(timestamp, size[, slide]) grouping column (the start time is
// 0). Durations are in microseconds, as Spark holds them.
type TimeWindow struct {
	// Key is the index of the window among the grouping columns.
	Key         int
	Size, Slide int64
}

// Windows appends to out the windows a row with event time ts (microseconds) falls in, in
// Spark's order: TimeWindowing's Expand, i = 0 .. ceil(size/slide)-1 with start = lastStart -
// i*slide, kept when start <= ts < end (always when slide divides size).
func (w *TimeWindow) Windows(ts int64, out [][2]int64) [][2]int64 {
	rem := ts % w.Slide
	if rem < 0 {
		rem += w.Slide
	}
	last := ts - rem
	n := (w.Size + w.Slide - 1) / w.Slide
	exact := w.Size%w.Slide == 0
	for i := int64(0); i < n; i++ {
		start := last - i*w.Slide
		end := start + w.Size
		if exact || (start <= ts && ts < end) {
			out = append(out, [2]int64{start, end})
		}
	}
	return out
}

var windowCallRE = regexp.MustCompile(`(?is)^window\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,\s*(['"])([^'"]*)['"]\s*(?:,\s*(['"])([^'"]*)['"]\s*)?\)$`)

// parseWindow compiles "window(timestamp, '1 minute'[, '30 seconds'])".
func parseWindow(text string) (*TimeWindow, error) {
	m := windowCallRE.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return nil, fmt.Errorf("want window(timestamp, 'N unit') or window(timestamp, 'N unit', 'N unit') (a start time is not supported)")
	}
	if m[1] != "timestamp" {
		return nil, fmt.Errorf("window over %q: the time column must be the Kafka column timestamp", m[1])
	}
	size, err := ParseIntervalMicros(m[3])
	if err != nil {
		return nil, fmt.Errorf("window duration %q: %v", m[3], err)
	}
	slide := size
	if m[5] != "" || m[4] != "" {
		if slide, err = ParseIntervalMicros(m[5]); err != nil {
			return nil, fmt.Errorf("slide duration %q: %v", m[5], err)
		}
	}
	// Spark's TimeWindow checks, with its texts (TimeWindow.checkInputDataTypes).
	switch {
	case size <= 0:
		//lint:ignore ST1005 Spark's exact text
		return nil, fmt.Errorf("The window duration (%d) must be greater than 0.", size)
	case slide <= 0:
		//lint:ignore ST1005 Spark's exact text
		return nil, fmt.Errorf("The slide duration (%d) must be greater than 0.", slide)
	case slide > size:
		//lint:ignore ST1005 Spark's exact text
		return nil, fmt.Errorf("The slide duration (%d) must be less than or equal to the windowDuration (%d).", slide, size)
	}
	return &TimeWindow{Size: size, Slide: slide}, nil
}

var intervalPartRE = regexp.MustCompile(`(?i)^(-?\d+)\s*(microseconds?|us|milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|h|days?|d|weeks?)$`)

// ParseIntervalMicros parses a day-time interval string as Spark's window() and withWatermark
// take it ("10 seconds", "1 minute 30 seconds", "interval 2 hours") into microseconds. Months
// and years are refused: their length is not fixed.
func ParseIntervalMicros(s string) (int64, error) {
	f := strings.Fields(strings.TrimSpace(s))
	if len(f) > 0 && strings.EqualFold(f[0], "interval") {
		f = f[1:]
	}
	if len(f) == 0 {
		return 0, fmt.Errorf("empty interval")
	}
	var total int64
	for i := 0; i < len(f); {
		part := f[i]
		if i+1 < len(f) && !strings.ContainsAny(part, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			part += " " + f[i+1]
			i++
		}
		i++
		m := intervalPartRE.FindStringSubmatch(strings.ReplaceAll(part, " ", ""))
		if m == nil {
			return 0, fmt.Errorf("%q is not N unit (microseconds, milliseconds, seconds, minutes, hours, days, weeks)", part)
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return 0, err
		}
		var unit int64
		switch u := strings.ToLower(m[2]); {
		case u == "us" || strings.HasPrefix(u, "micro"):
			unit = 1
		case u == "ms" || strings.HasPrefix(u, "milli"):
			unit = 1000
		case u == "s" || strings.HasPrefix(u, "sec"):
			unit = 1000_000
		case u == "m" || strings.HasPrefix(u, "min"):
			unit = 60_000_000
		case u == "h" || strings.HasPrefix(u, "hour"):
			unit = 3600_000_000
		case u == "d" || strings.HasPrefix(u, "day"):
			unit = 86400_000_000
		default:
			unit = 7 * 86400_000_000
		}
		total += n * unit
	}
	return total, nil
}

// EventTimeKey is the grouping column that carries the event-time watermark of column wm
// (Spark's key attribute with spark.watermarkDelayMs in its metadata): a window over it, or
// the column itself; -1 for none.
func (g *Grouping) EventTimeKey(wm string) int {
	if wm == "" {
		return -1
	}
	for i, k := range g.Keys {
		if (g.Window != nil && i == g.Window.Key && wm == "timestamp") || (g.keyProgs[i] == nil && g.keyIx[i] >= 0 && KafkaColumns[g.keyIx[i]].Name == wm && k.Kind != KindWindow) {
			return i
		}
	}
	return -1
}

// Mentions reports whether the filter's text names column c (a word match).
func Mentions(text, c string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(c) + `\b`).MatchString(text)
}
