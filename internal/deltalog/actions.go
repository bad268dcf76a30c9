// Package deltalog reads what ckpt needs of a Delta Lake table's transaction log (_delta_log):
// its commit and checkpoint versions, the table id (metaData.id) a streaming source checks its
// offsets against, and the txn action (appId = the query id, version = the batch id) by which
// the Delta sink skips a batch it already wrote. The parsers (ParseCommit, ParseLastCheckpoint,
// ParseName) are pure and fuzzed; Read and Table.Txn do the I/O through a storage.Store.
package deltalog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
)

// Txn is a SetTransaction action: the latest version an application (appId) committed.
type Txn struct {
	AppID   string `json:"appId"`
	Version int64  `json:"version"`
	// LastUpdated is the commit time in milliseconds, when the writer set it.
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

// Metadata is the part of a metaData action ckpt uses.
type Metadata struct {
	// ID is the table id: a streaming source's offsets carry it as reservoirId.
	ID            string            `json:"id"`
	Configuration map[string]string `json:"configuration,omitempty"`
	CreatedTime   *int64            `json:"createdTime,omitempty"`
}

// CommitInfo is the part of a commitInfo action ckpt shows.
type CommitInfo struct {
	Timestamp int64  `json:"timestamp"`
	Operation string `json:"operation"`
	// Query is the streaming query id (queryId in operationParameters of a STREAMING UPDATE).
	Query string `json:"query,omitempty"`
	// Epoch is the batch id of a STREAMING UPDATE (epochId in operationParameters), -1 otherwise.
	Epoch int64 `json:"epoch"`
}

// Commit is what one JSON commit file holds that ckpt uses.
type Commit struct {
	Txns       []Txn       `json:"txns"`
	Metadata   *Metadata   `json:"metaData,omitempty"`
	CommitInfo *CommitInfo `json:"commitInfo,omitempty"`
	// Actions counts the lines (actions) of the file.
	Actions int `json:"actions"`
}

// MaxLineBytes bounds one action line: add actions with statistics are a few KB; a commit line
// beyond this is refused rather than buffered.
const MaxLineBytes = 16 << 20

// Error is a parse failure naming the file, the 1-based line and what was expected.
type Error struct {
	File     string
	Line     int
	Expected string
	Err      error
}

func (e *Error) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	s += ": expected " + e.Expected
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

type rawAction struct {
	Txn        *Txn      `json:"txn"`
	MetaData   *Metadata `json:"metaData"`
	CommitInfo *struct {
		Timestamp           int64          `json:"timestamp"`
		Operation           string         `json:"operation"`
		OperationParameters map[string]any `json:"operationParameters"`
	} `json:"commitInfo"`
}

// ParseCommit parses a JSON commit (one action per line, as Delta writes NNN.json). Blank lines
// are skipped, as Delta's reader does; every other line must be a JSON object.
func ParseCommit(file string, data []byte) (*Commit, error) {
	c := &Commit{Txns: []Txn{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var a rawAction
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, &Error{File: file, Line: line, Expected: "a Delta action: one JSON object per line", Err: err}
		}
		c.Actions++
		switch {
		case a.Txn != nil:
			if a.Txn.AppID == "" {
				return nil, &Error{File: file, Line: line, Expected: `a txn action with a non-empty "appId"`}
			}
			c.Txns = append(c.Txns, *a.Txn)
		case a.MetaData != nil:
			if a.MetaData.ID == "" {
				return nil, &Error{File: file, Line: line, Expected: `a metaData action with a non-empty "id"`}
			}
			c.Metadata = a.MetaData
		case a.CommitInfo != nil:
			ci := &CommitInfo{Timestamp: a.CommitInfo.Timestamp, Operation: a.CommitInfo.Operation, Epoch: -1}
			if q, ok := a.CommitInfo.OperationParameters["queryId"].(string); ok {
				ci.Query = q
			}
			switch e := a.CommitInfo.OperationParameters["epochId"].(type) {
			case string:
				var n int64
				if _, err := fmt.Sscan(e, &n); err == nil {
					ci.Epoch = n
				}
			case float64:
				ci.Epoch = int64(e)
			}
			c.CommitInfo = ci
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &Error{File: file, Line: line + 1, Expected: fmt.Sprintf("a line of at most %d bytes", MaxLineBytes), Err: err}
	}
	return c, nil
}

// LastCheckpoint is _delta_log/_last_checkpoint: the newest checkpoint the writer recorded.
type LastCheckpoint struct {
	Version int64  `json:"version"`
	Size    int64  `json:"size"`
	Parts   *int64 `json:"parts,omitempty"`
}

// ParseLastCheckpoint parses _last_checkpoint (one JSON object).
func ParseLastCheckpoint(file string, data []byte) (*LastCheckpoint, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &Error{File: file, Line: 1, Expected: `a JSON object like {"version":10,"size":13}`, Err: err}
	}
	if _, ok := raw["version"]; !ok {
		return nil, &Error{File: file, Line: 1, Expected: `a "version" field`}
	}
	var lc LastCheckpoint
	if err := json.Unmarshal(data, &lc); err != nil {
		return nil, &Error{File: file, Line: 1, Expected: `integer "version", "size" and "parts"`, Err: err}
	}
	if lc.Version < 0 {
		return nil, &Error{File: file, Line: 1, Expected: `a "version" of 0 or more`}
	}
	return &lc, nil
}
