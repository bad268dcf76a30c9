package statefmt

import (
	"fmt"
	"strconv"
)

// Error is the error of every reader in this package.
type Error struct {
	// File is the name the caller gave.
	File string
	// Offset is the byte offset of the problem in the decompressed stream (for codec framing
	// errors, in the file itself); -1 when the problem is the whole file.
	Offset int64
	// Expected says what was expected, in words.
	Expected string
	// Got says what was found.
	Got string
	// Err is an underlying error (a codec's), or nil.
	Err error
	// Problem classifies the error for callers that map it to Spark's error (doctor).
	Problem Problem
	// Size is the bad size for ProblemKeySize and ProblemValueSize.
	Size int32
}

// Problem classifies an Error.
type Problem int

// The problems.
const (
	// ProblemOther: framing, codec or row layout.
	ProblemOther Problem = iota
	// ProblemKeySize: a negative key size other than the -1 end marker (Spark:
	// CANNOT_READ_DELTA_FILE_KEY_SIZE, CANNOT_READ_SNAPSHOT_FILE_KEY_SIZE).
	ProblemKeySize
	// ProblemValueSize: a negative value size in a snapshot (Spark:
	// CANNOT_READ_SNAPSHOT_FILE_VALUE_SIZE), or one below -1.
	ProblemValueSize
	// ProblemTruncated: the stream ends before its end marker (Spark: java.io.EOFException).
	ProblemTruncated
	// ProblemCodecTruncated: the file ends inside a codec block or its header (lz4-java:
	// EOFException "Stream ended prematurely").
	ProblemCodecTruncated
)

func (e *Error) Error() string {
	s := e.File
	if e.Offset >= 0 {
		s += ": offset " + strconv.FormatInt(e.Offset, 10)
	}
	s += ": expected " + e.Expected
	if e.Got != "" {
		s += ", got " + e.Got
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

func errf(file string, off int64, expected, gotFormat string, args ...any) *Error {
	return &Error{File: file, Offset: off, Expected: expected, Got: fmt.Sprintf(gotFormat, args...)}
}
