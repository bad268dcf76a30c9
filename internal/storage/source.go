package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Source is the content of a file Create writes: Size bytes, which Open reads from the start.
// A store may call Open more than once (a retried upload sends the body again, the AWS SDK
// reads it once for its checksum over plain HTTP) and closes every reader it opens, so the
// content is never held whole: a 1 GiB state file costs a copy buffer, not 1 GiB.
type Source struct {
	Size int64
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// ErrSourceSize marks a Create whose source gave fewer or more bytes than its Size (a file
// that changed while it was copied): nothing was published.
var ErrSourceSize = errors.New("the source's size changed while it was written")

// BytesSource is data as a Source.
func BytesSource(data []byte) Source {
	return Source{Size: int64(len(data)), Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}}
}

// ReaderAtSource is the first size bytes of r (an *os.File) as a Source: each Open reads them
// again from offset 0.
func ReaderAtSource(r io.ReaderAt, size int64) Source {
	return Source{Size: size, Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(io.NewSectionReader(r, 0, size)), nil
	}}
}

// FileSource is the file p of st, of size bytes (its Entry's Size), as a Source: each Open
// opens it again.
func FileSource(st Store, p string, size int64) Source {
	return Source{Size: size, Open: func(ctx context.Context) (io.ReadCloser, error) { return st.Open(ctx, p) }}
}

// exact passes a reader's bytes through and fails (ErrSourceSize) when they are fewer or more
// than size: a store must not publish a file that is not the source. The read that would
// complete the file first makes sure the source has no more: once the declared length is sent,
// a server may take the file as whole.
type exact struct {
	r          io.Reader
	size, left int64
}

func newExact(r io.Reader, size int64) *exact { return &exact{r: r, size: size, left: size} }

// sizeError is ErrSourceSize, and final: no client retries it.
type sizeError struct{ why string }

func (e *sizeError) Error() string        { return ErrSourceSize.Error() + ": " + e.why }
func (e *sizeError) Is(target error) bool { return target == ErrSourceSize }

// RetryableError tells the AWS SDK's retryer not to try again.
func (e *sizeError) RetryableError() bool { return false }

// NonRetriable tells azcore's retry policy not to try again.
func (e *sizeError) NonRetriable() {}

func (e *exact) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, e.end()
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	switch {
	case err == io.EOF && e.left > 0:
		return 0, &sizeError{fmt.Sprintf("it ended after %d of %d bytes", e.size-e.left, e.size)}
	case err != nil && err != io.EOF:
		return n, err
	case e.left == 0:
		if err := e.end(); err != io.EOF {
			return 0, err // the last bytes are held back
		}
	}
	return n, nil
}

// end checks that the source has no byte after size: io.EOF when it has none.
func (e *exact) end() error {
	var b [1]byte
	for range 100 {
		n, err := e.r.Read(b[:])
		if n > 0 {
			return &sizeError{fmt.Sprintf("it has more than %d bytes", e.size)}
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// copyBufSize is the buffer of a streamed write: large enough that a local copy is a few
// system calls per MiB, small enough that parallel copies cost little.
const copyBufSize = 1 << 20

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// rewinder is a Source as the io.ReadSeekCloser the AWS and Azure SDKs take as a request body:
// they find its length by seeking, and rewind it to send it again. Seeking moves a position
// only; the next Read opens the source there (skipping to a position other than the start
// reads up to it). A reading of it to the end moves the call's answer deadline by the time it
// took (extendAnswer): over plain HTTP the AWS SDK reads the whole body for its checksum and
// signature before it sends anything.
type rewinder struct {
	ctx context.Context
	src Source
	rc  io.ReadCloser
	r   io.Reader
	pos int64
	// started is when the current reading of the source began.
	started time.Time
}

func newRewinder(ctx context.Context, src Source) *rewinder { return &rewinder{ctx: ctx, src: src} }

func (w *rewinder) Read(p []byte) (int, error) {
	if w.pos >= w.src.Size && w.r == nil {
		return 0, io.EOF
	}
	if w.r == nil {
		w.started = time.Now()
		rc, err := w.src.Open(w.ctx)
		if err != nil {
			return 0, err
		}
		w.rc, w.r = rc, newExact(rc, w.src.Size)
		if w.pos > 0 {
			if _, err := io.CopyN(io.Discard, w.r, w.pos); err != nil {
				return 0, err
			}
		}
	}
	n, err := w.r.Read(p)
	w.pos += int64(n)
	if err == io.EOF {
		extendAnswer(w.ctx, time.Since(w.started))
	}
	return n, err
}

func (w *rewinder) Seek(off int64, whence int) (int64, error) {
	abs := off
	switch whence {
	case io.SeekCurrent:
		abs += w.pos
	case io.SeekEnd:
		abs += w.src.Size
	}
	if abs < 0 {
		return 0, errors.New("storage: seek before the start of the source")
	}
	if abs != w.pos {
		w.Close()
		w.pos = abs
	}
	return abs, nil
}

func (w *rewinder) Close() error {
	var err error
	if w.rc != nil {
		err = w.rc.Close()
	}
	w.rc, w.r = nil, nil
	return err
}
