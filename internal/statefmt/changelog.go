package statefmt

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// ChangelogHeader is the header of a RocksDB changelog. Version 1 files have none; Spark 4.0
// writes "v3" (v1 records after a lineage) with checkpoint format v2, and "v2"/"v4" (records
// with a type byte, for column families) for transformWithState.
type ChangelogHeader struct {
	Version int            `json:"version"`
	Lineage []LineageEntry `json:"lineage,omitempty"`
}

// LineageEntry is one element of a v3/v4 changelog's lineage: a version and the unique id of
// its snapshot or changelog.
type LineageEntry struct {
	Version  int64  `json:"version"`
	UniqueID string `json:"checkpointUniqueId"`
}

// ReadChangelogHeader reads the header of a decompressed changelog from r, leaving r at the
// first record. A version 1 changelog (no header) comes back as Version 1. The typed records
// of v2 and v4 are an error here: ReadTypedChangelogHeader and TypedRecordReader read them.
func ReadChangelogHeader(file string, r *bufio.Reader) (*ChangelogHeader, error) {
	h, err := ReadTypedChangelogHeader(file, r)
	if err == nil && h.Typed() {
		return h, errf(file, 0, "a changelog of format v1 or v3 (v2 and v4 hold transformWithState's typed records)", "v%d", h.Version)
	}
	return h, err
}

// Typed reports whether the records are v2/v4's: a type byte before each.
func (h *ChangelogHeader) Typed() bool { return h.Version == 2 || h.Version == 4 }

// ReadTypedChangelogHeader is ReadChangelogHeader for every version, v2 and v4 included.
func ReadTypedChangelogHeader(file string, r *bufio.Reader) (*ChangelogHeader, error) {
	head, err := r.Peek(4)
	if err == io.EOF || (err == nil && !(head[0] == 0 && head[1] == 2 && head[2] == 'v' && head[3] >= '2' && head[3] <= '4')) {
		return &ChangelogHeader{Version: 1}, nil
	}
	if err != nil {
		if len(head) < 4 {
			return &ChangelogHeader{Version: 1}, nil // too short for a header: the record reader reports it
		}
		return nil, &Error{File: file, Offset: 0, Expected: "a changelog", Err: err}
	}
	h := &ChangelogHeader{Version: int(head[3] - '0')}
	_, _ = r.Discard(4)
	if h.Version == 3 || h.Version == 4 {
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return nil, errf(file, 4, "the length of the changelog lineage", "end of stream")
		}
		n := int(binary.BigEndian.Uint16(l[:]))
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, errf(file, 6, fmt.Sprintf("a lineage of %d bytes", n), "end of stream")
		}
		if err := json.Unmarshal(b, &h.Lineage); err != nil {
			return nil, &Error{File: file, Offset: 6, Expected: "the changelog lineage JSON", Got: excerpt(string(b)), Err: err}
		}
	}
	return h, nil
}
