package logformat

import (
	"bytes"
	"errors"
	"io"
)

// maxLineBytes bounds one line of a streamed log so a corrupt file without
// line breaks cannot make the reader buffer it whole.
const maxLineBytes = MaxLineBytes

var errLineTooLong = errors.New("line too long")

// lineReader splits an io.Reader into lines with the same rules as
// splitLines, reusing one buffer: the returned line is valid until the next
// call. Positions of the next '\n' and '\r' are cached (with how far the
// buffer has been searched) so every byte is searched once, whatever the
// mix of line breaks and however small the reads.
type lineReader struct {
	r          io.Reader
	buf        []byte
	start, end int
	eof        bool
	err        error // sticky read error (not io.EOF)

	nl, cr         int // index in buf of the next '\n' / '\r' at or after start, or -1
	nlFrom, crFrom int // when nl/cr is -1: buf[start:xxFrom] holds none

	line            int  // lines returned so far
	trailingNewline bool // the last line returned had a terminator
	crBreaks        int
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: r, buf: make([]byte, 64<<10), nl: -1, cr: -1}
}

// find updates a cached position of c.
func (l *lineReader) find(c byte, pos, from *int) {
	if *pos >= l.start {
		return
	}
	f := max(*from, l.start)
	if i := bytes.IndexByte(l.buf[f:l.end], c); i >= 0 {
		*pos = f + i
		return
	}
	*pos, *from = -1, l.end
}

// next returns the next line, or ok=false at the end (err reports a read
// failure).
func (l *lineReader) next() (line []byte, ok bool, err error) {
	for {
		l.find('\n', &l.nl, &l.nlFrom)
		l.find('\r', &l.cr, &l.crFrom)
		switch {
		case l.cr >= 0 && (l.nl < 0 || l.cr < l.nl):
			if l.cr+1 < l.end || l.eof {
				line = l.buf[l.start:l.cr]
				next := l.cr + 1
				if next < l.end && l.buf[next] == '\n' {
					next++
				}
				l.start = next
				l.crBreaks++
				return l.emit(line, true)
			}
			// "\r" is the last buffered byte: one more byte tells whether
			// it is "\r\n".
		case l.nl >= 0:
			line = l.buf[l.start:l.nl]
			l.start = l.nl + 1
			return l.emit(line, true)
		case l.eof:
			if l.start == l.end {
				return nil, false, nil
			}
			line = l.buf[l.start:l.end]
			l.start = l.end
			return l.emit(line, false)
		}
		if l.err != nil {
			return nil, false, l.err
		}
		if err := l.fill(); err != nil {
			return nil, false, err
		}
	}
}

func (l *lineReader) emit(line []byte, terminated bool) ([]byte, bool, error) {
	l.line++
	// Meaningful once next reports the end: whether the last line had a
	// terminator.
	l.trailingNewline = terminated
	return line, true, nil
}

// fill reads more data, compacting or growing the buffer as needed.
func (l *lineReader) fill() error {
	if l.start > 0 {
		shift := l.start
		n := copy(l.buf, l.buf[l.start:l.end])
		l.start, l.end = 0, n
		for _, p := range []*int{&l.nl, &l.cr, &l.nlFrom, &l.crFrom} {
			*p = max(*p-shift, -1)
		}
		l.nlFrom, l.crFrom = max(l.nlFrom, 0), max(l.crFrom, 0)
	}
	if l.end == len(l.buf) {
		if len(l.buf) >= maxLineBytes {
			return errLineTooLong
		}
		nb := make([]byte, 2*len(l.buf))
		copy(nb, l.buf[:l.end])
		l.buf = nb
	}
	for tries := 0; tries < 100; tries++ {
		n, err := l.r.Read(l.buf[l.end:])
		l.end += n
		if err == io.EOF {
			l.eof = true
			return nil
		}
		if err != nil {
			l.err = err
			if n > 0 {
				return nil
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	return io.ErrNoProgress
}
