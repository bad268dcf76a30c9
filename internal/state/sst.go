package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/ckpt-dev/ckpt/internal/sstable"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// sstDecompress decompresses SST blocks with statefmt's codecs.
func sstDecompress(c sstable.Compression, dst, src []byte) ([]byte, error) {
	switch c {
	case sstable.LZ4Compression, sstable.LZ4HCCompression:
		return statefmt.DecompressBlock(statefmt.CodecLZ4, dst, src)
	case sstable.SnappyCompression:
		return statefmt.DecompressBlock(statefmt.CodecSnappy, dst, src)
	case sstable.ZSTDCompression:
		return statefmt.DecompressBlock(statefmt.CodecZstd, dst, src)
	}
	return nil, fmt.Errorf("%w: ckpt does not decompress %s blocks (lz4, snappy and zstd are read)", sstable.ErrUnsupported, c)
}

// CheckSST reads a whole SST file as the state reader does: footer, metaindex, properties,
// index and every block with its checksum. A file that is well formed but holds what ckpt
// does not read (merge operands, range deletions, another compression) passes.
func CheckSST(path string, data []byte) error {
	t, err := OpenSST(path, data)
	if err == nil {
		it := t.Iter()
		for it.Next() {
		}
		err = it.Err()
	}
	if errors.Is(err, sstable.ErrUnsupported) {
		return nil
	}
	return err
}

// OpenSST parses one SST file of a RocksDB store (the statefmt codecs decompress its blocks).
func OpenSST(path string, data []byte) (*sstable.Table, error) {
	return sstable.Open(path, data, sstable.Options{Decompress: sstDecompress})
}

// sstRows calls fn with the key and value (UnsafeRows, without RocksDB's encoding byte) of
// every live entry of the RocksDB version zip holds: the SST files its metadata lists, merged
// as RocksDB reads them (per user key the highest sequence number wins; a deletion hides the
// key). Keys come in ascending byte order.
func (r *Reader) sstRows(ctx context.Context, p *Partition, zip File, fn func(key, value []byte) error) error {
	data, err := r.st.ReadFile(ctx, zip.Path)
	if err != nil {
		return err
	}
	cp, err := statefmt.ParseRocksDBZip(zip.Path, data)
	if err != nil {
		return err
	}
	if len(cp.LogFiles) > 0 {
		return fmt.Errorf("%s lists %d RocksDB WAL files (%s): ckpt reads state from SST files and changelogs, not from RocksDB's write-ahead log", zip.Path, len(cp.LogFiles), cp.LogFiles[0].DFSName())
	}
	if len(r.op.SchemaV3Files) > 0 {
		// transformWithState keeps several state variables in one RocksDB instance (column
		// families, virtual ones from Spark 4.0: a key prefix): not one schema's rows.
		return fmt.Errorf("%s: operator %d is a transformWithState operator (state schema v3); ckpt does not read its column families from SST files", zip.Path, r.op.ID)
	}
	its := make([]*sstable.Iter, 0, len(cp.SSTFiles))
	for _, f := range cp.SSTFiles {
		path := p.Dir + "/SSTs/" + f.DFSName()
		ra, size, closeFn, err := r.openAt(ctx, path)
		if err != nil {
			return fmt.Errorf("%s lists %s: %w", zip.Path, path, err)
		}
		defer closeFn()
		t, err := sstable.OpenReaderAt(path, ra, size, sstable.Options{Decompress: sstDecompress})
		if err != nil {
			return err
		}
		if cf := t.Properties.ColumnFamily; cf != "" && cf != "default" {
			return fmt.Errorf("%s: an SST of RocksDB column family %q; ckpt reads the default column family only", path, cf)
		}
		it := t.Iter()
		if it.Next() {
			its = append(its, it)
		} else if it.Err() != nil {
			return it.Err()
		}
	}
	return mergeSSTs(its, func(key, value []byte, path string) error {
		if len(key) < 1 || len(value) < 1 {
			return &statefmt.Error{File: path, Offset: -1, Expected: "a RocksDB-encoded row (a version byte, then an UnsafeRow)", Got: "an empty key or value"}
		}
		if err := fn(key[1:], value[1:]); err != nil {
			var se *statefmt.Error
			var re *statefmt.RowError
			if errors.As(err, &re) && !errors.As(err, &se) {
				return &statefmt.Error{File: path, Offset: -1, Expected: "a row of the state schema", Err: re}
			}
			return err
		}
		return nil
	})
}

// openAt opens path for reads at offsets: the store's own file where it is one (local disk),
// else a copy in a temporary file, removed by closeFn. Either way the SST files are read a
// block at a time, not held in memory.
func (r *Reader) openAt(ctx context.Context, path string) (ra io.ReaderAt, size int64, closeFn func(), err error) {
	rc, err := r.st.Open(ctx, path)
	if err != nil {
		return nil, 0, nil, err
	}
	if f, ok := rc.(interface {
		io.ReaderAt
		Stat() (fs.FileInfo, error)
	}); ok {
		if fi, err := f.Stat(); err == nil {
			return f, fi.Size(), func() { rc.Close() }, nil
		}
	}
	defer rc.Close()
	tmp, err := os.CreateTemp("", "ckpt-sst-*")
	if err != nil {
		return nil, 0, nil, fmt.Errorf("a temporary copy of %s: %w", path, err)
	}
	done := func() { tmp.Close(); os.Remove(tmp.Name()) }
	n, err := io.Copy(tmp, rc)
	if err != nil {
		done()
		return nil, 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	return tmp, n, done, nil
}

// mergeSSTs merges iterators positioned on their first entry: each user key once, from the
// entry with the highest sequence number; keys whose newest entry is a deletion are skipped.
func mergeSSTs(its []*sstable.Iter, fn func(key, value []byte, path string) error) error {
	h := sstHeap(its)
	h.init()
	var last []byte
	started := false
	for len(h) > 0 {
		it := h[0]
		if !started || !bytes.Equal(it.UserKey, last) {
			started = true
			last = append(last[:0], it.UserKey...)
			if it.Kind == sstable.KindValue {
				if err := fn(it.UserKey, it.Value, it.Table().File); err != nil {
					return err
				}
			}
		}
		if it.Next() {
			h.fix0()
			continue
		}
		if err := it.Err(); err != nil {
			return err
		}
		h.pop0()
	}
	return nil
}

// sstHeap is a min-heap of iterators by (user key ascending, sequence number descending).
type sstHeap []*sstable.Iter

func (h sstHeap) less(i, j int) bool {
	if c := bytes.Compare(h[i].UserKey, h[j].UserKey); c != 0 {
		return c < 0
	}
	return h[i].Seq > h[j].Seq
}

func (h sstHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h sstHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h sstHeap) fix0() { h.down(0) }

func (h *sstHeap) pop0() {
	s := *h
	n := len(s) - 1
	s[0] = s[n]
	*h = s[:n]
	h.down(0)
}
