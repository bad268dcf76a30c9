// Package statefmt reads the byte formats of Spark's state stores: the HDFS-backed store's
// N.delta and N.snapshot files and the RocksDB store's N.changelog files (both a stream of
// length-prefixed UnsafeRow key/value records inside Spark's compression codec framing),
// UnsafeRow values driven by the state schema, the state schema files, and the RocksDB
// checkpoint zip's metadata (its SST file list). DecompressBlock decompresses the raw lz4, snappy
// and zstd blocks of RocksDB's SST files (package sstable parses the table format itself).
//
// It writes them too: FileWriter the HDFS-backed store's files, ChangelogWriter a RocksDB
// store's changelogs (v1, v3), RocksDBWriter a RocksDB store's version (an SST file built by
// package sstable, and the N.zip with Spark's metadata, RocksDB's CURRENT and a MANIFEST in
// RocksDB's log format).
//
// Like logformat it does no I/O of its own: readers take an io.Reader (so a large state file
// streams) or bytes. Unlike logformat it is not standard library only: the lz4, zstd and snappy
// codecs Spark compresses state with come from github.com/pierrec/lz4/v4 and
// github.com/klauspost/compress (already in the module graph through the Kafka client).
//
// Every error is a *Error naming the file, the byte offset and what was expected.
package statefmt
