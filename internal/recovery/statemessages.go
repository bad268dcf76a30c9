// Spark's texts for a state load that fails, per release: the one home of these messages.
// Each was taken from a real restart of a damaged copy of a Spark-written fixture
// (testdata/spark-state-damage/<release>/, recipe.json there; internal/sparkoracle).

package recovery

import (
	"fmt"
	"strings"
)

// The exception classes of a failed state load.
const (
	excEOF          = "java.io.EOFException"
	excIO           = "java.io.IOException"
	excFileNotFound = "java.io.FileNotFoundException"
	excLZ4          = "net.jpountz.lz4.LZ4Exception"
	excZip          = "java.util.zip.ZipException"
	excRocksDB      = "org.rocksdb.RocksDBException"
)

// taskFailure is the query's failure when a task fails on f. Spark 3.5 reports every task
// failure as the driver's SparkException "Job aborted due to stage failure", which quotes the
// task's exception and has it as its cause (not RocksDB's, which the 3.5 driver does not get
// back). From 4.0 a load that fails throws CANNOT_LOAD_STATE_STORE (StateStoreErrors), which
// the query fails with directly: the provider's own condition, or UNCATEGORIZED around what
// the reader threw; what fails after the load (an SST block the batch reads) is still "Job
// aborted". Stage and task ids count the application's jobs and the host is the executor's:
// ckpt writes <stage>, <tid> and <host>, and local mode's one attempt ("failed 1 times"; a
// cluster retries spark.task.maxFailures times).
func (p *planner) taskFailure(f *StateFailure) sparkFailure {
	raw := p.stateCause(f)
	if p.rel.errorConditions() && f.Damage != DamageSSTBlock {
		if strings.HasPrefix(raw.message, "[CANNOT_LOAD_STATE_STORE.") {
			return raw
		}
		return sparkFailure{exception: excSpark, exact: true, cause: &raw,
			message: condition(p.rel, "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED", "An error occurred during loading state. ", "58030")}
	}
	task := f.TaskException
	if f.TaskError != "" {
		task += ": " + f.TaskError
	}
	msg := fmt.Sprintf("Job aborted due to stage failure: Task %d in stage <stage> failed 1 times, most recent failure: Lost task %d.0 in stage <stage> (TID <tid>) (<host> executor driver): %s",
		f.Partition, f.Partition, task)
	top := sparkFailure{exception: excSpark, message: msg}
	if f.TaskException == excRocksDB && !p.rel.errorConditions() {
		return top
	}
	top.cause = &raw
	return top
}

// stateCause is the exception the provider throws, with its own causes.
func (p *planner) stateCause(f *StateFailure) sparkFailure {
	c := sparkFailure{exception: f.TaskException, message: f.TaskError, exact: !f.TaskErrorInexact}
	switch {
	case f.Damage == DamageMissing:
		// Both providers wrap the FileNotFoundException of the missing file.
		c.cause = &sparkFailure{exception: excFileNotFound, message: "File " + p.cp.SparkPath(f.File) + " does not exist", exact: true}
	case f.Damage == DamageCodecCorrupt && f.TaskError == "Stream is corrupted":
		// lz4-java's decoder fails first; its message names an offset of its own.
		c.cause = &sparkFailure{exception: excLZ4, message: "Error decoding offset <n> of input buffer"}
	}
	return c
}

// hdfsProviderString is HDFSBackedStateStoreProvider.toString, and whether it is exact: 4.1
// names the provider by its id, which holds the run id of the restart (a new UUID per run,
// written <uuid>).
func (p *planner) hdfsProviderString(op int64, store string, part StatePartition) (string, bool) {
	if p.rel.atLeast(4, 1) {
		return fmt.Sprintf("HDFSStateStoreProvider[stateStoreProviderId=StateStoreProviderId[ storeId=StateStoreId[ operatorId=%d, partitionId=%d, storeName=%s ], queryRunId=<uuid> ]]", op, part.ID, store), false
	}
	return fmt.Sprintf("HDFSStateStoreProvider[id = (op=%d,part=%d),dir = %s]", op, part.ID, p.cp.SparkPath(part.Dir)), true
}

// stateTaskError sets f's task exception and message: what the provider throws for the damage d
// (nil: the file is missing) on this release.
func (p *planner) stateTaskError(f *StateFailure, st StateStore, part StatePartition, d *StateDamage) {
	file := p.cp.SparkPath(f.File)
	set := func(exc, msg string, inexact bool) {
		f.TaskException, f.TaskError, f.TaskErrorInexact = exc, msg, inexact
	}
	hdfs := st.Provider != StateProviderRocksDB
	if d == nil {
		if hdfs {
			// updateFromDeltaFile: the delta Spark looks for after the newest snapshot.
			prov, exact := p.hdfsProviderString(f.Operator, st.Name, part)
			msg := fmt.Sprintf("Error reading delta file %s of %s: %s does not exist", file, prov, file)
			if p.rel.errorConditions() {
				set(excSpark, condition(p.rel, "CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS", "An error occurred during loading state. "+msg+".", "58030"), !exact)
				return
			}
			set(excIllegalState, msg, !exact)
			return
		}
		// RocksDB's changelog reader (StateStoreChangelogReader) wraps the
		// FileNotFoundException: QueryExecutionErrors.failedToReadStreamingStateFileError.
		msg := "Error reading streaming state file of " + file + " does not exist. If the stream job is restarted with a new or updated state operation, please create a new checkpoint location or clear the existing checkpoint location."
		if p.rel.errorConditions() {
			set(excSpark, condition(p.rel, "CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE", "An error occurred during loading state. "+msg, "58030"), false)
			return
		}
		set(excIllegalState, msg, false)
		return
	}
	if f.Damage == DamageChecksum {
		c := d.Checksum
		set(excSpark, condition(p.rel, "CHECKPOINT_FILE_CHECKSUM_VERIFICATION_FAILED", fmt.Sprintf(
			"Checksum verification failed, the file may be corrupted. File: %s\nExpected (file size: %d, checksum: %d), Computed (file size: %d, checksum: %d).",
			file, c.ExpectedSize, c.Expected, c.Size, c.Computed), "XX000"), false)
		return
	}
	switch d.Kind {
	case DamageEmpty, DamageEndsEarly:
		// lz4-java ends the stream where the file ends on a block boundary; DataInputStream's
		// readInt then throws without a message.
		set(excEOF, "", false)
	case DamageCodecTruncated:
		set(excEOF, "Stream ended prematurely", false)
	case DamageCodecCorrupt:
		set(excIO, "Stream is corrupted", false)
	case DamageKeySize, DamageValueSize:
		what := "delta"
		if strings.HasSuffix(f.File, ".snapshot") {
			what = "snapshot"
		}
		field := "key"
		if d.Kind == DamageValueSize {
			field = "value"
		}
		prov, exact := p.hdfsProviderString(f.Operator, st.Name, part)
		msg := fmt.Sprintf("Error reading %s file %s of %s: %s size cannot be %d", what, file, prov, field, d.Size)
		if p.rel.errorConditions() {
			cond := fmt.Sprintf("CANNOT_LOAD_STATE_STORE.CANNOT_READ_%s_FILE_%s_SIZE", strings.ToUpper(what), strings.ToUpper(field))
			set(excSpark, condition(p.rel, cond, "An error occurred during loading state. "+msg+".", "58030"), !exact)
			return
		}
		set(excIO, msg, !exact)
	case DamageZipTruncated:
		set(excEOF, "Unexpected end of ZLIB input stream", false)
	case DamageZipCorrupt:
		set(excZip, d.Detail, true)
	case DamageSSTMissing:
		// RocksDBFileManager copies the listed file: Hadoop's FileNotFoundException, unwrapped.
		if d.Size < 0 {
			set(excFileNotFound, "File "+file+" does not exist", false)
			break
		}
		set(excIO, d.Detail, true) // a size mismatch: not yet checked against Spark
	case DamageSSTFooter:
		// RocksDB opens the local copy of the file in the executor's working directory.
		found := "<n>"
		if d.Magic != 0 {
			found = fmt.Sprint(d.Magic)
		}
		// RocksDB JNI 8 (3.5) and 9 (4.x) word the file that names the SST differently.
		where := "in file <workdir>/MANIFEST-<n>"
		if p.rel.errorConditions() {
			where = " The file <workdir>/MANIFEST-<n> may be corrupted."
		}
		set(excRocksDB, "Bad table magic number: expected 9863518390377041911, found "+found+" in <workdir>/<n>.sst "+where, true)
	case DamageSSTBlock:
		set(excRocksDB, "block checksum mismatch: stored = <n>, computed = <n>, type = <n>  in <workdir>/<n>.sst offset <n> size <n>", true)
	default:
		set(excIO, d.Detail, true)
	}
}

// verifiesStateChecksums: Spark 4.1 writes a checksum file <file>.crc next to every state
// file and checks it when it opens the file (spark.sql.streaming.checkpoint.fileChecksum.enabled).
func (r release) verifiesStateChecksums() bool { return r.atLeast(4, 1) }

// maxSSTFormat is the highest BlockBasedTable format_version the release's RocksDB reads:
// Spark 3.5.7 (rocksdbjni 8.3.2) refused format 6, which Spark 4.1+ writes with
// rocksdb.formatVersion=6, and 4.0.0 read it (testdata/spark-migrate).
func (r release) maxSSTFormat() int {
	if r.atLeast(4, 0) {
		return 6
	}
	return 5
}

// stateFormatError sets f's task exception and message for a state file in a format the
// restart does not read (testdata/spark-migrate, unmigrated.error):
//   - DamageV2Name: the checkpoint format v1 loader parses the zip's name as a version (Spark
//     4.2.0: CANNOT_LOAD_STATE_STORE.UNCATEGORIZED around the NumberFormatException);
//   - DamageSSTFormat: RocksDB refuses the table when it opens it (Spark 3.5.7).
func (p *planner) stateFormatError(f *StateFailure, z *StateFile) {
	switch f.Damage {
	case DamageV2Name:
		name := z.Path[strings.LastIndexByte(z.Path, '/')+1:]
		f.TaskException, f.TaskError = "java.lang.NumberFormatException", `For input string: "`+strings.TrimSuffix(name, ".zip")+`"`
	case DamageSSTFormat:
		f.TaskException, f.TaskError = excRocksDB, "Unsupported BlockBasedTable format_version. Please check include/rocksdb/table.h for more info"
	}
}

// MaxSSTFormat is the highest RocksDB BlockBasedTable format_version that release sparkVersion
// reads (maxSSTFormat): what a migration may write for it.
func MaxSSTFormat(sparkVersion string) (int, error) {
	rel, err := parseRelease(sparkVersion)
	if err != nil {
		return 0, err
	}
	return rel.maxSSTFormat(), nil
}
