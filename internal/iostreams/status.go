package iostreams

import "io"

// Eraser is a live line on the terminal (a progress status line) that must be erased before
// anything else is written there, or the next text starts in the middle of it.
type Eraser interface{ Pause() }

// status holds the Eraser on screen.
type status struct{ e Eraser }

// SetStatus registers the status line on screen (nil: none). Writers from Guard erase it first.
func (s *IOStreams) SetStatus(e Eraser) {
	if e == nil {
		s.status.Store(nil)
		return
	}
	s.status.Store(&status{e})
}

// Guard returns w wrapped so that every write first erases the registered status line. Writers
// taken before the line exists (the request trace, a logger) stay safe: the guard looks the line
// up at each write. The status line itself must be drawn on an unguarded writer.
func (s *IOStreams) Guard(w io.Writer) io.Writer {
	if g, ok := w.(guarded); ok && g.s == s {
		return w
	}
	return guarded{s: s, w: w}
}

type guarded struct {
	s *IOStreams
	w io.Writer
}

func (g guarded) Write(b []byte) (int, error) {
	if st := g.s.status.Load(); st != nil {
		st.e.Pause()
	}
	return g.w.Write(b)
}
