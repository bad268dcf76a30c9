package transfer

import (
	"context"
	"errors"
	"io"
	"strconv"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// The rewrite of a compactible log streams: a sink's compact file may hold millions of
// entries, so it is read entry by entry (logformat's readers, with their per-line cap) in
// passes, never held whole: one to check that it parses and count what changes, one that the
// destination store reads as the new file's content (as often as its retries need), and one
// to check the rewritten paths.

// logEntries reads the entries of one compactible log as the rewrite needs them.
type logEntries interface {
	// next returns the path of the next entry and whether a rewritten path must exist (a sink
	// log's "add"; every file source entry), io.EOF after the last.
	next() (path string, check bool, err error)
	// appendEntry appends the current entry with its path replaced, as Spark writes it.
	appendEntry(b []byte, path string) []byte
	version() int
	trailingNewline() bool
	crBreaks() int
}

type sinkEntries struct {
	r   *logformat.SinkLogReader
	cur logformat.SinkFileStatus
}

func (s *sinkEntries) next() (string, bool, error) {
	e, err := s.r.Next()
	s.cur = e
	return e.Path, e.Action == "add", err
}

func (s *sinkEntries) appendEntry(b []byte, p string) []byte {
	e := s.cur
	e.Path = p
	return logformat.AppendSinkFileStatusJSON(b, e)
}

func (s *sinkEntries) version() int          { return s.r.Version() }
func (s *sinkEntries) trailingNewline() bool { return s.r.TrailingNewline() }
func (s *sinkEntries) crBreaks() int         { return s.r.CRBreaks() }

type sourceEntries struct {
	r   *logformat.FileSourceLogReader
	cur logformat.FileEntry
}

func (s *sourceEntries) next() (string, bool, error) {
	e, err := s.r.Next()
	s.cur = e
	return e.Path, true, err
}

func (s *sourceEntries) appendEntry(b []byte, p string) []byte {
	e := s.cur
	e.Path = p
	return logformat.AppendFileEntryJSON(b, e)
}

func (s *sourceEntries) version() int          { return s.r.Version() }
func (s *sourceEntries) trailingNewline() bool { return s.r.TrailingNewline() }
func (s *sourceEntries) crBreaks() int         { return s.r.CRBreaks() }

// openEntries opens src as a log of kind ("sink" or "source"; see logKind).
func openEntries(ctx context.Context, kind, name string, src storage.Source) (logEntries, io.Closer, error) {
	rc, err := src.Open(ctx)
	if err != nil {
		return nil, nil, err
	}
	var le logEntries
	if kind == "sink" {
		r, err := logformat.NewSinkLogReader(name, rc)
		if err != nil {
			rc.Close()
			return nil, nil, err
		}
		le = &sinkEntries{r: r}
	} else {
		r, err := logformat.NewFileSourceLogReader(name, rc)
		if err != nil {
			rc.Close()
			return nil, nil, err
		}
		le = &sourceEntries{r: r}
	}
	return le, rc, nil
}

// rewriteScan is the first pass over a log: how many entries the rewrites change (n) and how
// many no rewrite matches, and the size of the rewritten file. ok is false for a file that does
// not parse as its log, or that has "\r" line breaks (the rewrite would change them): it is
// copied as it is. A Kafka source's sources/<i>/0 holds initial offsets, not a file log.
func (c *copier) rewriteScan(ctx context.Context, kind, name string, src storage.Source) (n, unrewritten int, size int64, ok bool, err error) {
	le, closer, err := openEntries(ctx, kind, name, src)
	if err != nil {
		return 0, 0, 0, false, notLog(err)
	}
	defer closer.Close()
	size = int64(len(header(le.version())))
	var buf []byte
	for {
		p, _, err := le.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, 0, false, notLog(err)
		}
		np, hit := c.apply(p)
		if !hit {
			unrewritten++
		} else if np != p {
			n++
		}
		buf = le.appendEntry(append(buf[:0], '\n'), np)
		size += int64(len(buf))
	}
	if le.trailingNewline() {
		size++
	}
	if le.crBreaks() > 0 {
		return 0, 0, 0, false, nil
	}
	return n, unrewritten, size, true, nil
}

// notLog makes a parse error of the log a nil error (the file is copied as it is) and leaves
// every other error (a failed read) as it is.
func notLog(err error) error {
	var le *logformat.Error
	if errors.As(err, &le) {
		return nil
	}
	return err
}

func header(version int) string { return "v" + strconv.Itoa(max(version, 1)) }

// rewritten is the content of the rewritten log: each Open reads src again and rewrites it
// entry by entry.
func (c *copier) rewritten(kind, name string, src storage.Source, size int64) storage.Source {
	return storage.Source{Size: size, Open: func(ctx context.Context) (io.ReadCloser, error) {
		le, closer, err := openEntries(ctx, kind, name, src)
		if err != nil {
			return nil, err
		}
		return &rewriter{c: c, le: le, closer: closer, buf: []byte(header(le.version()))}, nil
	}}
}

// rewriter reads a log rewritten, one entry at a time.
type rewriter struct {
	c      *copier
	le     logEntries
	closer io.Closer
	buf    []byte // what is still to be read of the current line
	off    int
	done   bool
}

func (r *rewriter) Read(p []byte) (int, error) {
	for r.off == len(r.buf) {
		if r.done {
			return 0, io.EOF
		}
		path, _, err := r.le.next()
		switch {
		case err == io.EOF:
			r.done = true
			r.buf, r.off = r.buf[:0], 0
			if r.le.trailingNewline() {
				r.buf = append(r.buf, '\n')
			}
			continue
		case err != nil:
			return 0, err
		}
		np, _ := r.c.apply(path)
		r.buf = r.le.appendEntry(append(r.buf[:0], '\n'), np)
		r.off = 0
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

func (r *rewriter) Close() error { return r.closer.Close() }

// checkBatch is how many rewritten paths are checked at once: a bound on what a compact file
// of millions of entries holds in memory.
const checkBatch = 1024

// eachRewritten calls fn with the rewritten paths that must exist, in batches, reading src
// again.
func (c *copier) eachRewritten(ctx context.Context, kind, name string, src storage.Source, fn func([]MissingPath) error) error {
	le, closer, err := openEntries(ctx, kind, name, src)
	if err != nil {
		return err
	}
	defer closer.Close()
	var batch []MissingPath
	for {
		p, check, err := le.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if np, hit := c.apply(p); hit && np != p && check {
			batch = append(batch, MissingPath{Path: np, LogFile: name})
			if len(batch) == checkBatch {
				if err := fn(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
	}
	if len(batch) > 0 {
		return fn(batch)
	}
	return nil
}
