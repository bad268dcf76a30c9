package doctor

import "github.com/ckpt-dev/ckpt/internal/recovery"

// The Delta source codes (delta.go, with --delta-table): the planner's DeltaReasons.
const (
	CodeDeltaTableReplaced   = recovery.ReasonDeltaTableReplaced
	CodeDeltaVersionsExpired = recovery.ReasonDeltaVersionsExpired
)

func init() { Codes = append(Codes, deltaCodes...) }

var deltaCodes = []Code{
	{
		ID:         CodeDeltaTableReplaced,
		Title:      "A Delta source's table was replaced",
		Severities: []Severity{Error},
		Summary:    "With `--delta-table`: the table id in the table's `_delta_log` (`metaData.id`) differs from the `reservoirId` of the Delta source offset the restart starts from.",
		Explanation: `A Delta source offset names the table it was read from by its id (` + "`reservoirId`" + `), which a
Delta table keeps for its whole life. delta-spark checks it against the table's id every time it
reads an offset from the checkpoint, and stops when they differ: the table at the path was deleted
and created again (a new id, version 0 again), or the query's code now reads another table. The
checkpoint's versions and indexes mean nothing for the new table, so no restart on this checkpoint
can read it.`,
		SparkError: "```\n" + "org.apache.spark.sql.delta.DeltaIllegalStateException: " + recovery.DeltaTableReplacedError("<new table id>", "<old table id>") + "\n```",
		Fix: `If the table was recreated on purpose, start the query on a new checkpoint (it reads the new table's
latest snapshot first, or from ` + "`startingVersion`" + `); the sink then receives the new table's rows, so use a new
sink location or a sink that tolerates them. If the query should read the old table, point it back.
ckpt does not rewrite the offsets: the old versions do not exist in the new table.`,
	},
	{
		ID:         CodeDeltaVersionsExpired,
		Title:      "A Delta source's table no longer holds the version the restart reads",
		Severities: []Severity{Error},
		Summary:    "With `--delta-table`: the restart reads the table's changes from version V (the `reservoirVersion` of the offset it starts from), and the oldest JSON commit at or after V in `_delta_log` is newer than V.",
		Explanation: `A Delta source reads a table commit by commit from the version in its offset. Delta's log cleanup
deletes JSON commits and checkpoints older than ` + "`delta.logRetentionDuration`" + ` (30 days by default) each
time it writes a checkpoint. A query stopped, or lagging, for longer than that finds the commits it
needs gone: with ` + "`failOnDataLoss=true`" + ` (the default) delta-spark stops; with ` + "`false`" + ` it continues from
the earliest version left and the versions in between are never read. An offset still inside the
initial snapshot needs the snapshot of its version, which the log can build only from a checkpoint
at or below it and every commit after.`,
		SparkError: "```\n" + "org.apache.spark.sql.delta.DeltaIllegalStateException: " + recovery.DeltaVersionsExpiredError(5, 9) + "\n```\n\n(with the versions of the table at hand.)",
		Fix: `The unread versions are gone. Start the query on a new checkpoint with ` + "`startingVersion`" + ` set to the
earliest version the log holds, or restart once with the source option ` + "`failOnDataLoss=false`" + ` and accept
the skipped versions. Keep ` + "`delta.logRetentionDuration`" + ` above the longest time the query can be down or
behind, and watch ` + "`ckpt lag --delta-table`" + `.`,
	},
}
