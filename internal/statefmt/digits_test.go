package statefmt

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// The in-place formatters must write what strconv and the time package write: the JSON of a
// state row is compared with Spark's, and these produce most of its characters.

func TestAppendIntEqualsStrconv(t *testing.T) {
	vals := []int64{0, 1, -1, 9, 10, 11, 99, 100, 101, 999, 1000, -1000, math.MaxInt64, math.MinInt64,
		math.MaxInt32, math.MinInt32, math.MaxInt64 - 1, math.MinInt64 + 1}
	for i := range 19 {
		p := int64(pow10[i])
		vals = append(vals, p, p-1, p+1, -p, -p+1, -p-1)
	}
	for v := int64(-20_000); v <= 20_000; v++ { // every fast path and its edges
		vals = append(vals, v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		// Every magnitude, not just the large ones a uniform draw gives.
		vals = append(vals, int64(r.Uint64()>>r.IntN(64)), -int64(r.Uint64()>>r.IntN(64)))
	}
	prefix := []byte("x:")
	for _, v := range vals {
		got := appendInt(prefix[:2:2], v)
		want := strconv.AppendInt([]byte("x:"), v, 10)
		if string(got) != string(want) {
			t.Fatalf("appendInt(%d) = %q, want %q", v, got, want)
		}
		if v >= 0 {
			if got := appendUint(make([]byte, 0, 40), uint64(v)*2); string(got) != strconv.FormatUint(uint64(v)*2, 10) {
				t.Fatalf("appendUint(%d) = %q", uint64(v)*2, got)
			}
		}
	}
	if got := appendUint(nil, math.MaxUint64); string(got) != strconv.FormatUint(math.MaxUint64, 10) {
		t.Fatalf("appendUint(MaxUint64) = %q", got)
	}
}

func TestAppendDateEqualsTime(t *testing.T) {
	// 9999-12-31 is day 2932896; beyond it and before 0000-03-01 the time package renders.
	check := func(d int64) {
		t.Helper()
		if got, want := string(appendDate(nil, Date(d), false)), Date(d).String(); got != want {
			t.Fatalf("day %d: %q, want %q", d, got, want)
		}
	}
	for d := int64(minCivilDay - 800); d <= minCivilDay+800; d++ {
		check(d)
	}
	for d := int64(-3000); d <= 1<<16+3000; d++ { // the table's days and both its ends
		check(d)
	}
	for d := int64(2932896 - 800); d <= 2932896+800; d++ {
		check(d)
	}
	for d := int64(minCivilDay - 5000); d <= 2932896+5000; d += 13 {
		check(d)
	}
	for _, d := range []int64{math.MinInt32, math.MaxInt32} {
		check(d)
	}
}

func TestAppendTimestampEqualsTime(t *testing.T) {
	vals := []int64{0, -1, 1, 999, 1000, -1000, 86_400_000_000 - 1, -86_400_000_000, math.MaxInt64, math.MinInt64,
		(1<<16)*86_400_000_000 - 1, (1 << 16) * 86_400_000_000, minCivilDay * 86_400_000_000, minCivilDay*86_400_000_000 - 1}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		vals = append(vals, r.Int64N(400*365*86_400_000_000)-100*365*86_400_000_000, r.Int64())
	}
	for _, v := range vals {
		if got, want := string(appendTimestamp(nil, Timestamp(v), false)), Timestamp(v).String(); got != want {
			t.Fatalf("timestamp %d: %q, want %q", v, got, want)
		}
	}
}

func TestAppendTimestampNTZEqualsTime(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	vals := []int64{0, -1, 999, math.MaxInt64, math.MinInt64, minCivilDay*86_400_000_000 - 1}
	for range 10_000 {
		vals = append(vals, r.Int64N(400*365*86_400_000_000)-100*365*86_400_000_000, r.Int64())
	}
	for _, v := range vals {
		if got, want := string(appendTimestampNTZ(nil, TimestampNTZ(v), false)), TimestampNTZ(v).String(); got != want {
			t.Fatalf("timestamp_ntz %d: %q, want %q", v, got, want)
		}
	}
}
