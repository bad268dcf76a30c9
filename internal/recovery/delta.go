package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/deltalog"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// This file connects the planner's prediction to the Delta tables the query's Delta sources
// read (Options.Delta, read by the caller with deltalog.Read): whether the restart's start
// offset still names the table (reservoirId against metaData.id) and whether the table's log
// still holds the version it reads from. Facts come in as data; the decision is made here.

// The reasons a restart fails on a Delta source's table (Result.Reason, DeltaVerdict.Status).
// Stable: doctor reports them as finding codes.
const (
	// ReasonDeltaTableReplaced: the offset's reservoirId is not the table's id: the table was
	// deleted and created again at the same path, or the query reads another table.
	ReasonDeltaTableReplaced = "delta-table-replaced"
	// ReasonDeltaVersionsExpired: the log no longer holds the version the restart reads from
	// (log cleanup after delta.logRetentionDuration, or files deleted by hand).
	ReasonDeltaVersionsExpired = "delta-versions-expired"
)

// DeltaReasons are the Result.Reason values of a restart that fails on a Delta table rather than
// on the checkpoint, in the order delta-spark checks them (the id first, when it parses the
// offset). Like Reasons, the set is closed.
var DeltaReasons = []string{ReasonDeltaTableReplaced, ReasonDeltaVersionsExpired}

// DeltaTable is one Delta source's table, as read by the caller.
type DeltaTable struct {
	// Source is the source's line in the offsets files.
	Source int
	// Table is the table's log (deltalog.Read).
	Table *deltalog.Table
}

// Delta verdict statuses besides the DeltaReasons.
const (
	DeltaOK        = "ok"         // the table is the checkpoint's and holds what the restart reads
	DeltaNoOffset  = "no-offset"  // the restart has no Delta offset for the source (a new query)
	DeltaNotADelta = "not-delta"  // the source's offset is not a Delta source offset
	DeltaBadOffset = "bad-offset" // the Delta offset cannot be parsed (delta-spark's text in Message)
)

// DeltaVerdict is what the planner found for one Delta source's table.
type DeltaVerdict struct {
	Source   int    `json:"source"`
	Location string `json:"location"`
	// Status is DeltaOK, one of DeltaReasons, or another Delta* status.
	Status string `json:"status"`
	// Offset is the offset the restart reads the table from (DeltaStart), and OffsetFile where
	// it is.
	Offset     *logformat.DeltaSourceOffset `json:"offset,omitempty"`
	OffsetFile string                       `json:"offsetFile,omitempty"`
	// TableID, LatestVersion and EarliestCommit describe the table now.
	TableID        string `json:"tableId"`
	LatestVersion  int64  `json:"latestVersion"`
	EarliestCommit int64  `json:"earliestCommit"`
	// NeededVersion is the version the restart reads first; -1 without an offset.
	NeededVersion int64 `json:"neededVersion"`
	// VersionsBehind counts the table versions the query has not fully read (DeltaVersionsBehind
	// of the latest offsets file).
	VersionsBehind int64 `json:"versionsBehind"`
	// Message says what ckpt found; SparkError is delta-spark's error when the restart fails here.
	Message    string `json:"message"`
	SparkError string `json:"sparkError,omitempty"`
}

// DeltaVersionsBehind is how many versions of the table a source at offset o has not fully read:
// latest − reservoirVersion, plus one when the offset is before every change of its version
// (index -1 outside the initial snapshot: that version is unread too). Never negative.
func DeltaVersionsBehind(o logformat.DeltaSourceOffset, latest int64) int64 {
	n := latest - o.ReservoirVersion
	if !o.IsStartingVersion && o.Index == logformat.DeltaBaseIndex {
		n++
	}
	return max(n, 0)
}

// DeltaStart is the Delta offset the restart reads one source from, and where it is. Spark
// hands a V1 source, as Delta's is, the range of the latest batch first: runBatch of a re-run, or,
// when that batch is committed, MicroBatchExecution.populateStartOffsets' getBatch(offsets of the
// batch before, offsets/L) (seen in Spark 3.5's stack of the expired fixture). delta-spark then
// checks both offsets' table id and reads the table's changes from the start's version. The start
// is the offsets file before L (Result.PreviousBatch); without one (L = 0) it is offsets/L.
// raw is null when the restart has no offset for the source.
func DeltaStart(ctx context.Context, cp *checkpoint.Checkpoint, res *Result, source int) (raw json.RawMessage, file string, err error) {
	if res.RerunBatch != nil && res.RerunRange != nil {
		L := *res.RerunBatch
		if source < len(res.RerunRange.Start) && !NullOffset(res.RerunRange.Start[source]) {
			prev, _ := cp.Offsets.Prev(L)
			return res.RerunRange.Start[source], cp.Offsets.Path(prev), nil
		}
		if source < len(res.RerunRange.End) {
			return res.RerunRange.End[source], cp.Offsets.Path(L), nil
		}
		return nil, "", nil
	}
	L, ok := cp.Offsets.Latest()
	if !ok {
		return nil, "", nil
	}
	ids := []int64{L}
	if res.PreviousBatch != nil {
		ids = []int64{*res.PreviousBatch, L}
	}
	for _, id := range ids {
		raw, file, err := offsetLine(ctx, cp, id, source)
		if err != nil || !NullOffset(raw) {
			return raw, file, err
		}
	}
	return nil, "", nil
}

// DeltaEnd is the source's offset in the latest offsets file: where the query is.
func DeltaEnd(ctx context.Context, cp *checkpoint.Checkpoint, source int) (json.RawMessage, string, error) {
	L, ok := cp.Offsets.Latest()
	if !ok {
		return nil, "", nil
	}
	return offsetLine(ctx, cp, L, source)
}

func offsetLine(ctx context.Context, cp *checkpoint.Checkpoint, id int64, source int) (json.RawMessage, string, error) {
	seq, err := cp.ReadOffsets(ctx, id)
	var le *logformat.Error
	if errors.As(err, &le) || errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil // the planner reports an unreadable offsets file
	}
	if err != nil {
		return nil, "", err
	}
	if source >= len(seq.Sources) || seq.Sources[source].Void {
		return nil, "", nil
	}
	return json.RawMessage(seq.Sources[source].JSON), cp.Offsets.Path(id), nil
}

func assessDelta(ctx context.Context, cp *checkpoint.Checkpoint, tables []DeltaTable, res *Result) error {
	if len(tables) == 0 {
		return nil
	}
	failedBefore := res.Failed()
	for _, dt := range tables {
		t := dt.Table
		v := DeltaVerdict{Source: dt.Source, Location: t.Location, TableID: t.ID, LatestVersion: t.Latest,
			EarliestCommit: t.EarliestCommit, NeededVersion: -1}
		raw, file, err := DeltaStart(ctx, cp, res, dt.Source)
		if err != nil {
			return err
		}
		v.OffsetFile = file
		switch {
		case NullOffset(raw):
			v.Status, v.Message = DeltaNoOffset, "the restart has no offset for this source: a new query reads the table from its latest snapshot"
		case !logformat.IsDeltaSourceOffset(string(raw)):
			v.Status, v.Message = DeltaNotADelta, fmt.Sprintf("source %d's offset in %s is not a Delta source offset", dt.Source, file)
		default:
			o, perr := logformat.ParseDeltaSourceOffset(file, string(raw))
			if perr != nil {
				v.Status, v.Message = DeltaBadOffset, perr.Error()
				break
			}
			v.Offset = &o
			v.NeededVersion = o.ReservoirVersion
			v.VersionsBehind = DeltaVersionsBehind(o, t.Latest)
			if end, _, err := DeltaEnd(ctx, cp, dt.Source); err != nil {
				return err
			} else if e, err := logformat.ParseDeltaSourceOffset("", string(end)); err == nil && !NullOffset(end) {
				v.VersionsBehind = DeltaVersionsBehind(e, t.Latest)
			}
			judgeDelta(&v, o, t)
		}
		res.Delta = append(res.Delta, v)
		if v.Status == ReasonDeltaTableReplaced || v.Status == ReasonDeltaVersionsExpired {
			res.Warnings = append(res.Warnings, fmt.Sprintf("Delta source %d (%s): %s", v.Source, v.Location, v.Message))
		}
		if failedBefore || res.Failed() || (v.Status != ReasonDeltaTableReplaced && v.Status != ReasonDeltaVersionsExpired) {
			continue
		}
		res.Outcome = OutcomeFail
		res.Reason, res.FailedFile = v.Status, v.OffsetFile
		res.Error = ptr(v.SparkError)
		res.Exception = DeltaException
		res.RootCause = &Cause{Exception: DeltaException, Error: v.SparkError}
		if v.Offset != nil && v.Offset.IsStartingVersion && v.Status == ReasonDeltaVersionsExpired {
			res.ErrorInexact = true
			res.Warnings = append(res.Warnings, "the error text is ckpt's description: Spark's own message for this case could not be reproduced exactly")
		}
		res.key = v.Status
	}
	return nil
}

// judgeDelta applies delta-spark's restart checks to one offset, in its order: the table id
// (DeltaSourceOffset.apply), then the log (DeltaLog.getChanges from the offset's version, or the
// snapshot at it while the offset is in the initial snapshot).
func judgeDelta(v *DeltaVerdict, o logformat.DeltaSourceOffset, t *deltalog.Table) {
	if t.ID != "" && o.ReservoirID != t.ID {
		v.Status = ReasonDeltaTableReplaced
		v.Message = fmt.Sprintf("%s holds table %s, but the checkpoint read table %s: the table was deleted and created again at this path (or the query now reads another table)",
			t.Location, t.ID, o.ReservoirID)
		v.SparkError = DeltaTableReplacedError(t.ID, o.ReservoirID)
		return
	}
	ver := o.ReservoirVersion
	if o.IsStartingVersion {
		if !t.Reconstructable(ver) && ver <= t.Latest {
			v.Status = ReasonDeltaVersionsExpired
			v.Message = fmt.Sprintf("the offset is in the initial snapshot of version %d, which the log can no longer build (earliest commit %d, checkpoints %s)",
				ver, t.EarliestCommit, checkpointsText(t))
			v.SparkError = DeltaSnapshotExpiredError(ver)
			return
		}
	} else if first, ok := t.FirstCommitAtOrAfter(ver); ok && first > ver {
		v.Status = ReasonDeltaVersionsExpired
		v.Message = fmt.Sprintf("the restart reads the table's changes from version %d, but the earliest commit the log holds at or after it is %d: versions %s were cleaned up",
			ver, first, versionsText(ver, first-1))
		v.SparkError = DeltaVersionsExpiredError(ver, first)
		return
	}
	v.Status = DeltaOK
	v.Message = fmt.Sprintf("table %s, latest version %d; the restart reads from version %d (%d versions behind)", t.ID, t.Latest, ver, v.VersionsBehind)
}

func checkpointsText(t *deltalog.Table) string {
	if len(t.Checkpoints) == 0 {
		return "none"
	}
	var s []string
	for _, c := range t.Checkpoints {
		s = append(s, strconv.FormatInt(c.Version, 10))
	}
	return strings.Join(s, ", ")
}

func versionsText(a, b int64) string {
	if a == b {
		return strconv.FormatInt(a, 10)
	}
	return fmt.Sprintf("%d..%d", a, b)
}

// DeltaException is the class of both failures (DeltaErrors builds them as
// DeltaIllegalStateException; seen in the fixtures' stack traces).
const DeltaException = "org.apache.spark.sql.delta.DeltaIllegalStateException"

// DeltaTableReplacedError is delta-spark's DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE
// (DeltaErrors.differentDeltaTableReadByStreamingSource; message in
// spark/src/main/resources/error/delta-error-classes.json of delta-io/delta).
func DeltaTableReplacedError(newID, oldID string) string {
	// Spark joins the error class's message lines with "\n"; these end with a space.
	return "[DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE] The streaming query was reading from an unexpected Delta table (id = '" + newID + "'). \n" +
		"It used to read from another Delta table (id = '" + oldID + "') according to checkpoint. \n" +
		"This may happen when you changed the code to read from a new table or you deleted and \n" +
		"re-created a table. Please revert your change or delete your streaming query checkpoint \n" +
		"to restart from scratch."
}

// DeltaVersionsExpiredError is delta-spark's DELTA_MISSING_FILES_UNEXPECTED_VERSION
// (DeltaErrors.failOnDataLossException, thrown by DeltaLog.getChanges; same source file).
func DeltaVersionsExpiredError(start, earliest int64) string {
	return "[DELTA_MISSING_FILES_UNEXPECTED_VERSION] The stream from your Delta table was expecting process data from version " + strconv.FormatInt(start, 10) + ",\n" +
		"but the earliest available version in the _delta_log directory is " + strconv.FormatInt(earliest, 10) + ". The files\n" +
		"in the transaction log may have been deleted due to log cleanup. In order to avoid losing\n" +
		"data, we recommend that you restart your stream with a new checkpoint location and to\n" +
		"increase your delta.logRetentionDuration setting, if you have explicitly set it below 30\n" +
		"days.\n" +
		"If you would like to ignore the missed data and continue your stream from where it left\n" +
		"off, you can set the .option(\"failOnDataLoss\", \"false\") as part\n" +
		"of your readStream statement."
}

// DeltaSnapshotExpiredError describes the failure to build the snapshot an initial-snapshot
// offset points into; delta-spark's text depends on which files are gone, so this is ckpt's.
func DeltaSnapshotExpiredError(v int64) string {
	return fmt.Sprintf("the snapshot of version %d cannot be reconstructed from _delta_log (its commits or checkpoint were cleaned up)", v)
}
