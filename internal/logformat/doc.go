// Package logformat parses and writes the byte formats Apache Spark Structured
// Streaming keeps in a checkpoint: offsets/N, commits/N, the root metadata
// file, Kafka source offsets and the Kafka initial-offsets file, the file sink
// and file source compactible logs, and state operator metadata.
//
// # Purity
//
// The package does no I/O: parsers take the file name (used only in error
// messages) and the bytes, or an io.Reader supplied by the caller for the
// streaming readers of large compact logs. It imports only the standard
// library. Reading and writing files belongs to internal/checkpoint and
// internal/storage; keeping this package pure makes it trivially fuzzable and
// lets every caller (doctor, repair, the engine) share one definition of the
// formats.
//
// # Byte faithfulness
//
// Spark is the ground truth. Every parser accepts what Spark accepts for the
// structural parts it owns (version header rules of MetadataVersionUtil, Scala
// getLines line splitting on "\n", "\r\n" and "\r", the trimmed metadata line,
// the skipped lead byte of the Kafka initial-offsets file) and reports what
// Spark would reject with a typed *Error carrying Spark's own message.
//
// Every writer produces the bytes Spark writes: compact JSON in the field
// order Spark declares, escaped the way Jackson (behind json4s) escapes,
// non-ASCII written as UTF-8, no trailing newline. Parsed values remember the
// few things Spark's files vary in (a trailing newline in hand-made fixtures,
// the order of map keys, raw offset JSON and unknown fields), so that
// Marshal(Parse(x)) == x for every file Spark writes. Input that is valid but
// not in Spark's canonical form (CRLF line breaks, "v+1", extra whitespace,
// escaped characters Jackson would not escape) is normalised to Spark's form;
// writing it again is then stable.
//
// Versions: parsers accept every version some Spark release (or master)
// writes and report it; the *MaxVersion constants name the newest each
// parser understands. Whether a particular Spark release can read a version
// is decided by internal/recovery, not here.
package logformat
