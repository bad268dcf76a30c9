package statefmt

import (
	"fmt"
	"math/bits"
	"sync/atomic"
)

// Integer and date formatting for the JSON rendering of state rows, the bulk of a state read:
// strconv.AppendInt formats into its own buffer and then copies, and the signed divisions of
// the calendar arithmetic cost more than the rest of a date; these write in place.

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// pow10 holds 10^0 to 10^19.
var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// decimalLen is the number of decimal digits of u (1 for 0).
func decimalLen(u uint64) int {
	// log10(2) ≈ 1233/4096: an estimate that is exact or one short.
	n := bits.Len64(u) * 1233 >> 12
	if u >= pow10[n] {
		n++
	}
	return max(n, 1)
}

// appendInt is strconv.AppendInt(dst, v, 10).
func appendInt(dst []byte, v int64) []byte {
	u := uint64(v)
	if v < 0 {
		dst = append(dst, '-')
		u = -u
	}
	return appendUint(dst, u)
}

// appendUint is strconv.AppendUint(dst, u, 10), written straight into dst.
func appendUint(dst []byte, u uint64) []byte {
	switch {
	case u < 10:
		return append(dst, byte('0'+u))
	case u < 100:
		return append(dst, digitPairs[u*2], digitPairs[u*2+1])
	case u < 10000 && u >= 1000:
		hi, lo := u/100*2, u%100*2
		return append(dst, digitPairs[hi], digitPairs[hi+1], digitPairs[lo], digitPairs[lo+1])
	}
	n := decimalLen(u)
	l := len(dst)
	if cap(dst)-l < n {
		dst = append(dst, make([]byte, n)...)
	} else {
		dst = dst[:l+n]
	}
	b := dst[l : l+n]
	i := n
	for u >= 100 {
		q := u / 100
		r := (u - q*100) * 2
		i -= 2
		b[i], b[i+1] = digitPairs[r], digitPairs[r+1]
		u = q
	}
	if u >= 10 {
		b[0], b[1] = digitPairs[u*2], digitPairs[u*2+1]
	} else {
		b[0] = byte('0' + u)
	}
	return dst
}

// minCivilDay is 0000-03-01, the first day civil handles.
const minCivilDay = -719468

// civil converts days since 1970-01-01, from minCivilDay on, to a proleptic Gregorian date
// (H. Hinnant's algorithm), in unsigned arithmetic: from year 0 on no era is negative, and
// unsigned divisions by constants are cheaper.
func civil(days int64) (y, m, d int64) {
	z := uint64(days - minCivilDay)
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int64(doy - (153*mp+2)/5 + 1)
	m = int64(mp + 3)
	if mp >= 10 {
		m = int64(mp - 9)
	}
	y = int64(yoe + era*400)
	if m <= 2 {
		y++
	}
	return y, m, d
}

// ymdText holds days 0 to 65535 (1970-01-01 to 2149-06-06) as yyyy-MM-dd: state rows carry
// dates and timestamps in every row, and copying ten bytes costs a tenth of civil and the
// formatting. Built on first use (a few milliseconds, 640 KiB); a race builds it twice, harmlessly.
var ymdText atomic.Pointer[[1 << 16][10]byte]

func ymdTable() *[1 << 16][10]byte {
	if t := ymdText.Load(); t != nil {
		return t
	}
	t := new([1 << 16][10]byte)
	for i := range t {
		y, m, d := civil(int64(i))
		copy(t[i][:], fmt.Appendf(nil, "%04d-%02d-%02d", y, m, d))
	}
	ymdText.CompareAndSwap(nil, t)
	return ymdText.Load()
}
