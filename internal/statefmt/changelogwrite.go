package statefmt

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// ChangelogWriter writes a RocksDB store's N.changelog (or N_<uuid>.changelog) as Spark's
// StateStoreChangelogWriter does: in the store's codec, the header of its version (none for
// v1; Java's writeUTF of "v3" and of the lineage JSON for v3), then records of RocksDB-encoded
// rows (the encoding version byte before each UnsafeRow) and the end marker on Close.
// transformWithState's typed records (v2, v4) are not written.
type ChangelogWriter struct {
	f   *FileWriter
	buf []byte
}

// NewChangelogWriter starts a changelog of header h (Version 1 or 3) in codec on w.
func NewChangelogWriter(codec string, w io.Writer, h ChangelogHeader) (*ChangelogWriter, error) {
	if h.Version != 1 && h.Version != 3 {
		return nil, fmt.Errorf("a RocksDB changelog of format v%d: ckpt writes v1 and v3 (v2 and v4 hold transformWithState's typed records)", h.Version)
	}
	if h.Version == 1 && len(h.Lineage) > 0 {
		return nil, fmt.Errorf("a v1 changelog has no lineage; v3 carries one")
	}
	f, err := NewFileWriter(codec, w)
	if err != nil {
		return nil, err
	}
	if h.Version == 3 {
		lineage := h.Lineage
		if lineage == nil {
			lineage = []LineageEntry{}
		}
		j, err := json.Marshal(lineage)
		if err != nil {
			return nil, err
		}
		if len(j) > 0xffff {
			return nil, fmt.Errorf("a changelog lineage of %d bytes: Java's writeUTF holds 65535", len(j))
		}
		head := []byte{0, 2, 'v', '3'}
		head = binary.BigEndian.AppendUint16(head, uint16(len(j)))
		f.bytes(append(head, j...))
	}
	return &ChangelogWriter{f: f}, nil
}

// Put writes a put of a key and value (UnsafeRows).
func (c *ChangelogWriter) Put(key, value []byte) error {
	c.buf = append(append(c.buf[:0], 0), key...)
	n := len(c.buf)
	c.buf = append(append(c.buf, 0), value...)
	return c.f.Put(c.buf[:n], c.buf[n:])
}

// Delete writes a delete of key.
func (c *ChangelogWriter) Delete(key []byte) error {
	c.buf = append(append(c.buf[:0], 0), key...)
	return c.f.Delete(c.buf)
}

// Close writes the end marker and ends the compressed stream.
func (c *ChangelogWriter) Close() error { return c.f.Close() }
