package doctor

import (
	"fmt"
	"strings"
)

// pageIntro opens docs/doctor.md. It documents the contract around the codes (severities, exit
// codes, JSON) so that a runbook author needs only this page.
const pageIntro = `# ckpt doctor: finding codes

<!-- Generated from internal/doctor/codes.go by "go test ./internal/doctor -run TestDocs -update". Do not edit. -->

` + "`ckpt doctor <checkpoint>`" + ` finds every known bad condition in a Spark Structured Streaming
checkpoint. Each finding has a stable **code** (listed below; never renamed or reused), a severity,
a plain explanation, the Spark error it causes and the command that fixes it. ` + "`ckpt doctor --explain CODE`" + `
prints one section of this page: rendered for the terminal (bold headings, coloured code, wrapped to
its width) on a terminal, as Markdown when piped.

What a restart does is decided by ckpt's one recovery planner, the same one ` + "`ckpt replay`" + ` shows and
` + "`ckpt repair`" + ` verifies with, so doctor and replay never disagree.

## Usage

` + "```" + `
ckpt doctor <checkpoint> [--mode sync|async|spark-2.1] [--spark-version V] [--sink DIR]
            [--deep] [--fail-on error|warning|info] [-o table|json]
            [--bootstrap-server HOST:PORT [--kafka-option kafka.K=V]... [--kafka-option-file F]
             [--broker-timeout D] [--fail-on-data-loss=false]]
            [--delta-table [I=]PATH]... [--delta-sink PATH]
ckpt doctor --explain CODE
ckpt doctor --recursive PARENT [--deep] [--fail-on …] [--mode …] [--spark-version …] [-o table|json]
` + "```" + `

* ` + "`--mode`" + `: the engine the query restarts with: ` + "`sync`" + ` (default), ` + "`async`" + ` (async progress tracking
  enabled) or ` + "`spark-2.1`" + `.
* ` + "`--spark-version`" + `: the Spark release that restarts the query (default 3.5); error texts and log
  version limits follow it.
* ` + "`--sink`" + `: a file sink's output directory (the one holding ` + "`_spark_metadata`" + `), to compare with the
  checkpoint.
* ` + "`--deep`" + `: read every log file instead of only those a restart reads (plus zero-byte files, which the
  listing shows); with ` + "`--sink`" + `, also compare the files the sink's log lists as live with the output's data
  files (the ` + "`sink-file-*`" + ` and ` + "`sink-log-batch-missing`" + ` codes, as ` + "`ckpt sink verify`" + `, [sink.md](sink.md)).
* ` + "`--recursive`" + ` (` + "`-r`" + `): diagnose every checkpoint below a folder or S3 prefix (a directory with
  ` + "`offsets/`" + `, ` + "`commits/`" + ` or a ` + "`metadata`" + ` file; not below one, nor in ` + "`_ckpt`" + `, ` + "`_spark_metadata`" + ` or
  ` + "`_temporary`" + `), one row each (status, codes, restart verdict), worst first: unreadable, error,
  warning, info, ok. The exit code is the worst: 1 when one could not be read, 3 when one has
  findings at or above ` + "`--fail-on`" + `. Each checkpoint gets its own detected defaults. With ` + "`-o json`" + `:
  ` + "`{\"parent\", \"worst\", \"checkpoints\": [{\"location\", \"status\", \"errors\", \"warnings\", \"notes\", \"codes\", \"verdict\", \"engine\", \"error\"}]}`" + `.
* ` + "`--fail-on`" + `: the lowest severity that makes the exit code 3 (default ` + "`error`" + `).
* ` + "`--bootstrap-server`" + `: the Kafka cluster the query reads. doctor then also checks the offsets the
  restart reads next against the broker's earliest and latest offsets (the broker codes at the end of
  this page). Client options are Spark's ` + "`kafka.*`" + ` options: ` + "`--kafka-option kafka.security.protocol=SASL_SSL`" + `
  (repeatable) or ` + "`--kafka-option-file client.properties`" + `; ` + "`--broker-timeout`" + ` bounds the broker read (default
  30s). See [lag.md](lag.md#broker-access-shared-by-lag-doctor-replay-inspect-repair). The broker is only read.
* ` + "`--fail-on-data-loss=false`" + `: with a broker, model the Kafka source option ` + "`failOnDataLoss=false`" + ` (Spark's
  default is ` + "`true`" + `): data loss is then a warning Spark logs instead of the exception that stops the query.
* ` + "`--delta-table [I=]PATH`" + `: the Delta table a Delta source reads (any store; ` + "`I=`" + ` names the source index,
  else the checkpoint's Delta sources take the paths in order; repeatable). doctor then checks the offsets the
  restart reads against the table's log: ` + "`delta-table-replaced`" + `, ` + "`delta-versions-expired`" + ` ([delta.md](delta.md)).
* ` + "`--delta-sink PATH`" + `: the Delta table the query writes to, instead of ` + "`--sink`" + `: its ` + "`txn`" + ` action for the
  query id gives the sink's latest batch (` + "`sink-ahead`" + `, ` + "`sink-behind`" + ` as for a file sink).

## Severities and exit codes

| severity | meaning |
|---|---|
| ` + "`error`" + ` | the restart fails, or it succeeds but silently loses or duplicates data |
| ` + "`warning`" + ` | the restart works, but something is wrong and will bite later (a rollback, an upgrade, switching a setting off) |
| ` + "`info`" + ` | expected behaviour worth knowing before restarting |

| exit | meaning |
|---|---|
| 0 | no finding at or above ` + "`--fail-on`" + ` |
| 1 | ckpt itself failed (unreadable location, I/O error) |
| 2 | usage error (unknown flag or code) |
| 3 | at least one finding at or above ` + "`--fail-on`" + ` |

## JSON output

` + "`-o json`" + ` prints one object:

` + "```" + `json
{
  "findings": [
    {
      "code": "missing-previous-offsets",
      "severity": "error",
      "batch": 6,
      "path": "offsets/6",
      "files": ["offsets/7"],
      "message": "one-line statement of this instance",
      "explanation": "what Spark does and why it matters",
      "sparkError": "java.lang.IllegalStateException: batch 6 doesn't exist",
      "fix": "what to do, with the commands below",
      "commands": ["ckpt repair /data/ckpt --execute"]
    }
  ],
  "restart": { "outcome": "fail", "...": "the recovery planner's prediction, as ckpt replay -o json prints it" }
}
` + "```" + `

` + "`batch`" + ` and ` + "`sparkError`" + ` are ` + "`null`" + ` when they do not apply; ` + "`path`" + ` is the file or directory the
finding is about (relative to the checkpoint; the sink's files are prefixed with ` + "`sink:`" + `) and ` + "`files`" + ` the
other files involved; ` + "`commands`" + ` are complete shell commands with the checkpoint location substituted.
Findings are sorted by severity, then in the order of this page, then by batch.

` + "`notChecked`" + ` lists the checks this run left out for want of a flag, each with a stable ` + "`check`" + ` and a
` + "`message`" + `: ` + "`kafka-offsets`" + ` (a checkpoint with Kafka sources, without ` + "`--bootstrap-server`" + `: records
gone from Kafka, a recreated topic or fewer partitions are not seen), ` + "`sink`" + ` (no ` + "`--sink`" + ` or
` + "`--delta-sink`" + `), ` + "`deep`" + ` (no ` + "`--deep`" + `). A script tells "healthy" from "not checked" by it; the
exit code stays that of the findings. The summary line says so too: ` + "`✓ no problems found; Kafka offsets not checked: pass --bootstrap-server.`" + `,
and the other checks left out follow on the next line.

Broker findings (with ` + "`--bootstrap-server`" + `) have ` + "`path`" + ` ` + "`kafka:TOPIC-PARTITION`" + ` (` + "`kafka:TOPIC`" + ` for
` + "`topic-missing`" + `), ` + "`files`" + ` the offsets file whose offsets meet the problem, ` + "`batch`" + ` the batch that meets it,
and a ` + "`kafka`" + ` object: ` + "`topic`, `partition`, `checkpointOffset`, `logStart`, `logEnd`" + ` (−1 unknown), ` + "`records`" + `
affected (−1 unknown), ` + "`dataLoss`, `fails`, `message`, `sparkMessage`" + ` (Spark's full text),
` + "`failOnDataLossFalse`" + ` (what that setting does instead), ` + "`source`, `batch`, `rerun`, `file`, `failOnDataLoss`" + `. The
` + "`restart`" + ` prediction then includes what the broker makes of the restart: a warning per problem, and
` + "`outcome`" + ` ` + "`fail`" + ` with Spark's exception when one stops the query.

Delta findings (with ` + "`--delta-table`" + `) have ` + "`path`" + ` ` + "`delta:TABLE`" + `, ` + "`files`" + ` the offsets file whose Delta offset the
restart reads the table from, and a ` + "`delta`" + ` object (the planner's ` + "`restart.delta`" + ` entry for the table):
` + "`source`, `location`, `status`, `offset`, `offsetFile`, `tableId`, `latestVersion`, `earliestCommit`, `neededVersion`, `versionsBehind`, `message`, `sparkError`" + `
([delta.md](delta.md)).

## Codes

`

// Markdown renders the whole page of codes (docs/doctor.md).
func Markdown() string {
	var b strings.Builder
	b.WriteString(pageIntro)
	b.WriteString("| code | severity | condition |\n|---|---|---|\n")
	for _, c := range Codes {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s |\n", c.ID, c.ID, severities(c), c.Summary)
	}
	for _, c := range Codes {
		b.WriteString("\n")
		b.WriteString(section(c, "##"))
	}
	return b.String()
}

// Explain renders the section of one code, as `ckpt doctor --explain` prints it.
func Explain(id string) (string, bool) {
	c, ok := Lookup(id)
	if !ok {
		return "", false
	}
	return section(c, "#"), true
}

func severities(c Code) string {
	s := make([]string, len(c.Severities))
	for i, sv := range c.Severities {
		s[i] = string(sv)
	}
	return strings.Join(s, ", ")
}

// section renders one code; h is the heading level, so the same text serves the page and
// --explain.
func section(c Code, h string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n\n", h, c.ID)
	fmt.Fprintf(&b, "**%s.** Severity: %s.\n\n", c.Title, severities(c))
	fmt.Fprintf(&b, "%s\n\n", c.Summary)
	fmt.Fprintf(&b, "%s# What it means\n\n%s\n\n", h, c.Explanation)
	if c.SparkError != "" {
		fmt.Fprintf(&b, "%s# Spark's error\n\n%s\n\n", h, c.SparkError)
	}
	fmt.Fprintf(&b, "%s# Fix\n\n%s\n", h, c.Fix)
	return b.String()
}
