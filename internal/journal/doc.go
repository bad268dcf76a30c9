// Package journal is the one engine through which every change to a checkpoint goes (repair,
// offsets reset, rewind, purge, sink repair, state repartition): a plan of file actions is
// applied with a lock, a journal and backups, verified with the recovery planner, and can be
// undone or finished byte for byte.
//
//   - Apply applies a Plan: it takes the lock, writes the journal, copies every file it will
//     touch to the backup location, then applies the actions one by one, writing the journal
//     durably before each change. Finally it reloads the checkpoint, runs the planner again and
//     records the verified outcome.
//   - Undo and Resume read a journal and bring the checkpoint back to exactly the bytes it had, or
//     finish the change. Both decide what is left to do by hashing the files as they are now, so
//     they are safe to run again after any crash, including their own.
//
// Every path is checked before it is touched (Confine): the engine changes only direct children
// of offsets/ and commits/, state store versions (and new SST files of a RocksDB store, which it
// only creates) and a file sink's log, never follows a symbolic link, and never writes outside
// its own _ckpt/ directory otherwise.
package journal
