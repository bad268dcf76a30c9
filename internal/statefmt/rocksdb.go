package statefmt

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// RocksDBCheckpoint is the metadata file inside a RocksDB store's N.zip (or N_<uuid>.zip): the
// SST files (kept in the shared SSTs/ directory) and log files the version needs.
type RocksDBCheckpoint struct {
	// Version is the metadata header ("v1" → 1).
	Version  int           `json:"version"`
	SSTFiles []RocksDBFile `json:"sstFiles"`
	LogFiles []RocksDBFile `json:"logFiles"`
	NumKeys  int64         `json:"numKeys"`
	// ColumnFamilyMapping maps the virtual column families of a transformWithState store to
	// the 2-byte id before each of their keys (Spark 4.0+); nil for other stores.
	ColumnFamilyMapping map[string]int `json:"columnFamilyMapping,omitempty"`
	// Entries are the other files of the zip (OPTIONS, MANIFEST, CURRENT, ...).
	Entries []string `json:"entries"`
}

// RocksDBFile is one immutable file of a checkpoint: its name in the RocksDB directory and its
// name in the checkpoint's SSTs/ (or logs/) directory.
type RocksDBFile struct {
	LocalFileName  string `json:"localFileName"`
	DFSSSTFileName string `json:"dfsSstFileName,omitempty"`
	DFSLogFileName string `json:"dfsLogFileName,omitempty"`
	SizeBytes      int64  `json:"sizeBytes"`
}

// DFSName is the file's name under SSTs/ or logs/.
func (f RocksDBFile) DFSName() string {
	if f.DFSSSTFileName != "" {
		return f.DFSSSTFileName
	}
	return f.DFSLogFileName
}

// ParseRocksDBZip reads the checkpoint metadata of a RocksDB N.zip.
func ParseRocksDBZip(file string, data []byte) (*RocksDBCheckpoint, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, &Error{File: file, Offset: -1, Expected: "a zip archive", Err: err}
	}
	cp := &RocksDBCheckpoint{Entries: []string{}}
	found := false
	for _, f := range zr.File {
		if f.Name != "metadata" {
			cp.Entries = append(cp.Entries, f.Name)
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, &Error{File: file + "!metadata", Offset: -1, Expected: "a readable zip entry", Err: err}
		}
		b, err := io.ReadAll(io.LimitReader(rc, 64<<20))
		rc.Close()
		if err != nil {
			return nil, &Error{File: file + "!metadata", Offset: -1, Expected: "a readable zip entry", Err: err}
		}
		if err := parseRocksDBMetadata(file+"!metadata", b, cp); err != nil {
			return nil, err
		}
		found = true
	}
	if !found {
		return nil, &Error{File: file, Offset: -1, Expected: "a zip entry named metadata", Got: fmt.Sprintf("entries %v", cp.Entries)}
	}
	return cp, nil
}

func parseRocksDBMetadata(file string, b []byte, cp *RocksDBCheckpoint) error {
	line, rest, _ := bytes.Cut(b, []byte("\n"))
	v := strings.TrimSpace(string(line))
	if len(v) < 2 || v[0] != 'v' {
		return &Error{File: file, Offset: 0, Expected: `a version line like "v1"`, Got: fmt.Sprintf("%q", v)}
	}
	if _, err := fmt.Sscanf(v, "v%d", &cp.Version); err != nil || cp.Version < 1 {
		return &Error{File: file, Offset: 0, Expected: `a version line like "v1"`, Got: fmt.Sprintf("%q", v)}
	}
	var m struct {
		SSTFiles []RocksDBFile  `json:"sstFiles"`
		LogFiles []RocksDBFile  `json:"logFiles"`
		NumKeys  int64          `json:"numKeys"`
		CFs      map[string]int `json:"columnFamilyMapping"`
	}
	if err := json.Unmarshal(rest, &m); err != nil {
		return &Error{File: file, Offset: int64(len(line) + 1), Expected: "the checkpoint metadata JSON", Err: err}
	}
	cp.SSTFiles, cp.LogFiles, cp.NumKeys, cp.ColumnFamilyMapping = m.SSTFiles, m.LogFiles, m.NumKeys, m.CFs
	if cp.SSTFiles == nil {
		cp.SSTFiles = []RocksDBFile{}
	}
	if cp.LogFiles == nil {
		cp.LogFiles = []RocksDBFile{}
	}
	return nil
}
