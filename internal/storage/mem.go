package storage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Mem is an in-memory Store with the same semantics as the others:
// no-overwrite writes, implicit directories, sorted listings. It is meant for
// tests; listings scan every file.
type Mem struct {
	d      *memData
	prefix string // "" or a clean relative path, no trailing slash
	uri    string
}

type memData struct {
	mu    sync.Mutex
	files map[string]memFile
	now   func() time.Time
}

type memFile struct {
	data []byte // never mutated after the write
	mod  time.Time
}

var (
	memMu     sync.Mutex
	memByName = map[string]*Mem{}
	memSeq    atomic.Int64
)

// NewMem returns an empty, unnamed Mem whose URI is "mem://anon-<n>". It is
// not reachable through Open; use MemNamed for that.
func NewMem() *Mem {
	return &Mem{
		d:   &memData{files: map[string]memFile{}, now: time.Now},
		uri: fmt.Sprintf("mem://anon-%d", memSeq.Add(1)),
	}
}

// MemNamed returns the process-global Mem called name, creating it empty on
// first use; Open("mem://name") returns the same files. Tests should use a
// unique name (t.Name()) and ForgetMem it in cleanup.
func MemNamed(name string) *Mem {
	memMu.Lock()
	defer memMu.Unlock()
	m, ok := memByName[name]
	if !ok {
		m = NewMem()
		m.uri = "mem://" + name
		memByName[name] = m
	}
	return &Mem{d: m.d, uri: m.uri}
}

// ForgetMem drops the process-global Mem called name; a later MemNamed or
// Open starts empty. Stores already returned keep their files.
func ForgetMem(name string) {
	memMu.Lock()
	defer memMu.Unlock()
	delete(memByName, name)
}

// Sub returns a view of the same files rooted at dir (a clean relative path
// below m's root). It panics if dir is invalid, as it is a test helper.
func (m *Mem) Sub(dir string) *Mem {
	c, err := cleanPath(dir, true)
	if err != nil {
		panic(fmt.Sprintf("storage: Mem.Sub(%q): %v", dir, err))
	}
	uri := m.uri
	if c != "" {
		uri = strings.TrimSuffix(uri, "/") + "/" + c
	}
	return &Mem{d: m.d, prefix: Join(m.prefix, c), uri: uri}
}

// SetClock replaces the clock that stamps ModTime on WriteFile, for
// deterministic tests. Default: time.Now. It affects every view of the same
// files.
func (m *Mem) SetClock(now func() time.Time) {
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	m.d.now = now
}

// SetModTime sets the ModTime of an existing file, for tests of age-based
// logic. A missing file gives an error wrapping fs.ErrNotExist.
func (m *Mem) SetModTime(path string, t time.Time) error {
	c, k, err := m.key(OpStat, path, false)
	if err != nil {
		return err
	}
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	f, ok := m.d.files[k]
	if !ok {
		return pathErr(OpStat, m.uri, c, fs.ErrNotExist)
	}
	f.mod = t
	m.d.files[k] = f
	return nil
}

// URI returns "mem://name[/prefix]" (or "mem://anon-<n>" for NewMem).
func (m *Mem) URI() string { return m.uri }

func (m *Mem) key(op Op, p string, allowRoot bool) (string, string, error) {
	c, err := cleanPath(p, allowRoot)
	if err != nil {
		return "", "", pathErr(op, m.uri, p, err)
	}
	return c, Join(m.prefix, c), nil
}

// under returns the key prefix of everything below the key k ("" = all).
func under(k string) string {
	if k == "" {
		return ""
	}
	return k + "/"
}

// rel converts a key to a path relative to m's root.
func (m *Mem) rel(k string) string {
	if m.prefix == "" {
		return k
	}
	return strings.TrimPrefix(k, m.prefix+"/")
}

// List implements Store.
func (m *Mem) List(ctx context.Context, dir string) ([]Entry, error) {
	c, k, err := m.key(OpList, dir, true)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, pathErr(OpList, m.uri, c, err)
	}
	pre := under(k)
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	out := []Entry{}
	dirs := map[string]bool{}
	for fk, f := range m.d.files {
		rest, ok := strings.CutPrefix(fk, pre)
		if !ok {
			continue
		}
		if name, _, isDir := strings.Cut(rest, "/"); isDir {
			if !dirs[name] {
				dirs[name] = true
				out = append(out, Entry{Path: m.rel(pre + name), IsDir: true})
			}
		} else {
			out = append(out, Entry{Path: m.rel(fk), Size: int64(len(f.data)), ModTime: f.mod})
		}
	}
	sortEntries(out)
	return out, nil
}

// Walk implements Store.
func (m *Mem) Walk(ctx context.Context, dir string) ([]Entry, error) {
	c, k, err := m.key(OpWalk, dir, true)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, pathErr(OpWalk, m.uri, c, err)
	}
	pre := under(k)
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	out := []Entry{}
	for fk, f := range m.d.files {
		if strings.HasPrefix(fk, pre) {
			out = append(out, Entry{Path: m.rel(fk), Size: int64(len(f.data)), ModTime: f.mod})
		}
	}
	sortEntries(out)
	return out, nil
}

// Stat implements Store. A directory exists while a file lies below it; the
// root always exists.
func (m *Mem) Stat(ctx context.Context, path string) (Entry, error) {
	c, k, err := m.key(OpStat, path, true)
	if err != nil {
		return Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, pathErr(OpStat, m.uri, c, err)
	}
	if c == "" {
		return Entry{Path: "", IsDir: true}, nil
	}
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	if f, ok := m.d.files[k]; ok {
		return Entry{Path: c, Size: int64(len(f.data)), ModTime: f.mod}, nil
	}
	pre := under(k)
	for fk := range m.d.files {
		if strings.HasPrefix(fk, pre) {
			return Entry{Path: c, IsDir: true}, nil
		}
	}
	return Entry{}, pathErr(OpStat, m.uri, c, fs.ErrNotExist)
}

func (m *Mem) get(ctx context.Context, op Op, path string) (string, []byte, error) {
	c, k, err := m.key(op, path, false)
	if err != nil {
		return "", nil, err
	}
	if err := ctx.Err(); err != nil {
		return "", nil, pathErr(op, m.uri, c, err)
	}
	m.d.mu.Lock()
	f, ok := m.d.files[k]
	m.d.mu.Unlock()
	if !ok {
		return "", nil, pathErr(op, m.uri, c, fs.ErrNotExist)
	}
	return c, f.data, nil
}

// ReadFile implements Store; the result is a copy the caller may modify.
func (m *Mem) ReadFile(ctx context.Context, path string) ([]byte, error) {
	_, b, err := m.get(ctx, OpRead, path)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// Open implements Store.
func (m *Mem) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	_, b, err := m.get(ctx, OpOpen, path)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// WriteFile implements Store. The data is copied.
func (m *Mem) WriteFile(ctx context.Context, path string, data []byte) error {
	return m.Create(ctx, path, BytesSource(data))
}

// Create implements Store. The file is read into one buffer of its size, the memory the store
// keeps it in.
func (m *Mem) Create(ctx context.Context, path string, src Source) error {
	c, k, err := m.key(OpWrite, path, false)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return pathErr(OpWrite, m.uri, c, err)
	}
	if m.exists(k) {
		return pathErr(OpWrite, m.uri, c, fs.ErrExist) // before reading a large source
	}
	data, err := readSource(ctx, src)
	if err != nil {
		return pathErr(OpWrite, m.uri, c, err)
	}
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	if _, ok := m.d.files[k]; ok {
		return pathErr(OpWrite, m.uri, c, fs.ErrExist)
	}
	m.d.files[k] = memFile{data: data, mod: m.d.now()}
	return nil
}

func (m *Mem) exists(k string) bool {
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	_, ok := m.d.files[k]
	return ok
}

// readSource reads a source whole into a buffer of exactly its size.
func readSource(ctx context.Context, src Source) ([]byte, error) {
	rc, err := src.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data := make([]byte, src.Size)
	r := newExact(rc, src.Size)
	if _, err := io.ReadFull(r, data); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = fmt.Errorf("%w: it ended early", ErrSourceSize)
		}
		return nil, err
	}
	if _, err := r.Read(nil); err != io.EOF {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return data, nil
}

// Delete implements Store.
func (m *Mem) Delete(ctx context.Context, path string) error {
	c, k, err := m.key(OpDelete, path, false)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return pathErr(OpDelete, m.uri, c, err)
	}
	m.d.mu.Lock()
	defer m.d.mu.Unlock()
	delete(m.d.files, k)
	return nil
}
