package logformat

import "strings"

// NameKind classifies a file name found in a log directory.
type NameKind int

const (
	// NameOther is anything Spark does not write or ignores ("foo", "metadata").
	NameOther NameKind = iota
	// NameBatch is a batch file: the decimal batch id ("5").
	NameBatch
	// NameCompact is a compaction batch of a compactible log ("9.compact").
	NameCompact
	// NameTemp is a leftover of an interrupted atomic write:
	// ".5.<uuid>.tmp", ".5.<uuid>.TID3.tmp", or Spark 2.x ".<uuid>.tmp".
	NameTemp
	// NameChecksum is a Hadoop local-FS checksum: ".5.crc", ".9.compact.crc", ".metadata.crc".
	NameChecksum
)

// CompactFileSuffix marks compaction batches in compactible logs.
const CompactFileSuffix = ".compact"

var nameKindNames = [...]string{"other", "batch", "compact", "temp", "checksum"}

// String returns a stable name for the kind.
func (k NameKind) String() string {
	if k >= 0 && int(k) < len(nameKindNames) {
		return nameKindNames[k]
	}
	return "name-kind(" + itoa(int(k)) + ")"
}

// Name is a parsed file name.
type Name struct {
	Kind NameKind
	// Batch is the batch id of a NameBatch/NameCompact, and of a temp or
	// checksum file whose Target is a batch or compact name (HasBatch).
	Batch int64
	// Target is, for temp and checksum files, the name of the file they
	// belong to ("5", "9.compact", "metadata"; "" for Spark 2.x temps).
	Target string
	// HasBatch reports whether Batch is meaningful.
	HasBatch bool
}

// ParseName classifies a file name with Spark's rules: a batch name is
// anything java.lang.Long.parseLong accepts ("+5" and "-1" included; see
// HDFSMetadataLog.isBatchFile), a compact name is that plus ".compact"
// (CompactibleFileStreamLog). Whether ".compact" names count in a given
// directory is the caller's decision: HDFSMetadataLog (offsets, commits)
// ignores them.
func ParseName(name string) Name {
	if strings.HasPrefix(name, ".") {
		if t, ok := strings.CutSuffix(name[1:], ".crc"); ok && t != "" {
			n := Name{Kind: NameChecksum, Target: t}
			n.Batch, n.HasBatch = batchOf(t)
			return n
		}
		if inner, ok := strings.CutSuffix(name[1:], ".tmp"); ok {
			if t, ok := tempTarget(inner); ok {
				n := Name{Kind: NameTemp, Target: t}
				n.Batch, n.HasBatch = batchOf(t)
				return n
			}
		}
	}
	if id, ok := javaParseLong(name); ok {
		return Name{Kind: NameBatch, Batch: id, HasBatch: true}
	}
	if p, ok := strings.CutSuffix(name, CompactFileSuffix); ok {
		if id, ok := javaParseLong(p); ok {
			return Name{Kind: NameCompact, Batch: id, HasBatch: true}
		}
	}
	return Name{Kind: NameOther}
}

// batchOf parses a batch or compact file name.
func batchOf(name string) (int64, bool) {
	if id, ok := javaParseLong(name); ok {
		return id, true
	}
	if p, ok := strings.CutSuffix(name, CompactFileSuffix); ok {
		return javaParseLong(p)
	}
	return 0, false
}

// tempTarget takes "<target>.<uuid>[.TID<n>]" or "<uuid>" (the inside of
// CheckpointFileManager's temp name) and returns target.
func tempTarget(inner string) (string, bool) {
	if i := strings.LastIndex(inner, ".TID"); i >= 0 {
		if _, ok := asciiDigits(inner[i+4:]); ok {
			inner = inner[:i]
		}
	}
	const uuidLen = 36
	if len(inner) < uuidLen || !isUUID(inner[len(inner)-uuidLen:]) {
		return "", false
	}
	if len(inner) == uuidLen {
		return "", true
	}
	rest := inner[:len(inner)-uuidLen]
	if len(rest) < 2 || rest[len(rest)-1] != '.' {
		return "", false
	}
	return rest[:len(rest)-1], true
}

func asciiDigits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	return len(s), true
}

// isUUID matches java.util.UUID.toString: 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if unhex(c) < 0 {
				return false
			}
		}
	}
	return true
}

// IsCompactionBatch is CompactibleFileStreamLog.isCompactionBatch:
// (batchID+1) % interval == 0. A non-positive interval is never a
// compaction (Spark would divide by zero).
func IsCompactionBatch(batchID, interval int64) bool {
	if interval <= 0 {
		return false
	}
	return (batchID+1)%interval == 0
}
