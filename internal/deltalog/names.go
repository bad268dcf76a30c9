package deltalog

import (
	"strconv"
	"strings"
)

// Kinds of files in _delta_log (FileNames in delta-spark).
const (
	NameOther      = ""
	NameCommit     = "commit"     // 00000000000000000007.json
	NameCheckpoint = "checkpoint" // .checkpoint.parquet, .checkpoint.<i>.<n>.parquet, .checkpoint.<uuid>.{parquet,json}
	NameChecksum   = "crc"        // 00000000000000000007.crc
	NameCompacted  = "compacted"  // 00000000000000000004.00000000000000000007.compacted.json
)

// Name is one _delta_log file name as Delta reads it.
type Name struct {
	Kind    string
	Version int64
	// Part and Parts number a multi-part checkpoint's files (1-based); 0 otherwise.
	Part, Parts int
	// V2 marks a V2 checkpoint's top-level file (<version>.checkpoint.<uuid>.parquet or .json).
	V2 bool
}

// ParseName classifies a file name of _delta_log. Versions are 20 decimal digits, as Delta
// writes them; any other name is NameOther.
func ParseName(name string) Name {
	if len(name) < 21 || name[20] != '.' {
		return Name{}
	}
	v, ok := version20(name[:20])
	if !ok {
		return Name{}
	}
	rest := name[21:]
	switch {
	case rest == "json":
		return Name{Kind: NameCommit, Version: v}
	case rest == "crc":
		return Name{Kind: NameChecksum, Version: v}
	case rest == "checkpoint.parquet":
		return Name{Kind: NameCheckpoint, Version: v}
	case strings.HasPrefix(rest, "checkpoint."):
		mid := strings.TrimPrefix(rest, "checkpoint.")
		if p, n, ok := multipart(mid); ok {
			return Name{Kind: NameCheckpoint, Version: v, Part: p, Parts: n}
		}
		for _, ext := range []string{".parquet", ".json"} {
			if u, ok := strings.CutSuffix(mid, ext); ok && len(u) == 36 && strings.Count(u, "-") == 4 {
				return Name{Kind: NameCheckpoint, Version: v, V2: true}
			}
		}
	case strings.HasSuffix(rest, ".compacted.json") && len(rest) == 20+len(".compacted.json"):
		if _, ok := version20(rest[:20]); ok {
			return Name{Kind: NameCompacted, Version: v}
		}
	}
	return Name{}
}

func version20(s string) (int64, bool) {
	if len(s) != 20 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// multipart parses "<part:10 digits>.<parts:10 digits>.parquet".
func multipart(s string) (int, int, bool) {
	body, ok := strings.CutSuffix(s, ".parquet")
	if !ok || len(body) != 21 || body[10] != '.' {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(body[:10])
	n, err2 := strconv.Atoi(body[11:])
	if err1 != nil || err2 != nil || p < 1 || n < 1 || p > n || body[0] == '+' || body[11] == '+' || body[0] == '-' || body[11] == '-' {
		return 0, 0, false
	}
	return p, n, true
}

// CommitName is the file name of commit v.
func CommitName(v int64) string { return pad20(v) + ".json" }

func pad20(v int64) string {
	s := strconv.FormatInt(v, 10)
	if len(s) < 20 {
		s = strings.Repeat("0", 20-len(s)) + s
	}
	return s
}
