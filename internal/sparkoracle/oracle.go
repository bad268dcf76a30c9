// Package sparkoracle makes real Spark the oracle of ckpt's restart predictions.
//
// The harness spark/restart (driver spark/Restart.java) restarts a stateless Kafka query on a
// checkpoint with a pinned Spark release and reports what Spark did. TestSparkLive runs every
// case through it and stores Spark's answers as goldens, testdata/spark-oracle/<release>/<case>.json
// (written only by running Spark: UPDATE_SPARK=1). TestGoldens, always on, compares each golden
// with `ckpt replay -o json` on the same checkpoint; the known disagreements are data,
// testdata/spark-oracle/divergences.json, and the test asserts that the observed set equals it.
//
// This file holds the pure part: the golden and harness types, normalisation and the comparison.
package sparkoracle

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Result is one line of spark/restart's output (docs/spark-oracle.md).
type Result struct {
	Case       string  `json:"case,omitempty"`
	Spark      string  `json:"spark"`
	Outcome    string  `json:"outcome"`
	ErrorClass *string `json:"errorClass"`
	Error      *string `json:"error"`
	Exception  string  `json:"exception,omitempty"`
	// Causes are the messages of the whole cause chain, outermost first.
	Causes []string `json:"causes,omitempty"`
	// Chain is the whole cause chain, outermost first: each exception's class, message and error
	// class (null when it is not a SparkThrowable or has none).
	Chain      []ChainLink `json:"chain,omitempty"`
	TopExc     string      `json:"topException,omitempty"`
	TopMessage string      `json:"topMessage,omitempty"`
	TimedOut   bool        `json:"timedOut,omitempty"`
	DriverLog  []string    `json:"driverLog"`
	Batches    []Batch     `json:"batches"`
	// Output is spark.read's count of a file sink's output (case option countOutput).
	Output *OutputCount `json:"output,omitempty"`
}

// OutputCount is what spark.read finds in a file sink's output: rows, and distinct
// (topic, partition, offset).
type OutputCount struct {
	Rows     int64 `json:"rows"`
	Distinct int64 `json:"distinct"`
}

// ChainLink is one exception of a failure's cause chain.
type ChainLink struct {
	Exception  string  `json:"exception"`
	Message    string  `json:"message"`
	ErrorClass *string `json:"errorClass"`
}

// Batch is one executed micro-batch as StreamingQueryProgress reports it, or, for a batch that
// ran and failed before Spark reported its progress (at its commit, or SPARK-55271 after it), as
// the harness found it in the checkpoint after the run (RecordedFrom "checkpoint").
type Batch struct {
	ID      int64         `json:"id"`
	Sources []BatchSource `json:"sources"`
	// RecordedFrom is "checkpoint" for a batch without a progress event, "" otherwise; then
	// CommitWritten and SinkLogWritten say which of its files the run wrote.
	RecordedFrom   string `json:"recordedFrom,omitempty"`
	CommitWritten  bool   `json:"commitWritten,omitempty"`
	SinkLogWritten bool   `json:"sinkLogWritten,omitempty"`
}

// BatchSource is one source of a batch: raw offset JSON (null when none) and the rows read
// (for a batch recorded from the checkpoint, the rows of the files its sink log entry lists;
// null without a file sink log).
type BatchSource struct {
	StartOffset  json.RawMessage `json:"startOffset"`
	EndOffset    json.RawMessage `json:"endOffset"`
	NumInputRows *int64          `json:"numInputRows"`
}

// Rows is the rows read, 0 when unknown.
func (s BatchSource) Rows() int64 {
	if s.NumInputRows == nil {
		return 0
	}
	return *s.NumInputRows
}

// Golden is a stored observation: how the case was run and what Spark did.
type Golden struct {
	Case string `json:"case"`
	// Release is the exact Spark version ("3.5.7").
	Release string `json:"release"`
	// Mode is "sync" or "async" (asynchronous progress tracking), as ckpt's --mode.
	Mode string `json:"mode"`
	// Checkpoint names the checkpoint: "scenario:<name>" or "generated:<seed>:<index>".
	Checkpoint string `json:"checkpoint"`
	// Sink is the harness's --sink; Trigger its --trigger; Options its --option pairs.
	Sink    string            `json:"sink"`
	Trigger string            `json:"trigger"`
	Options map[string]string `json:"options,omitempty"`
	// SinkLatest is the latest batch of the file sink log laid out before the restart, if any.
	SinkLatest *int64 `json:"sinkLatest,omitempty"`
	Spark      Result `json:"spark"`
}

// Prediction is the part of `ckpt replay -o json` (recovery.Result) that Spark can confirm.
type Prediction struct {
	Outcome      string  `json:"outcome"`
	Error        *string `json:"error"`
	ErrorInexact bool    `json:"errorInexact"`
	Exception    string  `json:"exception"`
	ErrorClass   string  `json:"errorClass"`
	RootCause    *struct {
		Exception string `json:"exception"`
		Error     string `json:"error"`
	} `json:"rootCause"`
	NextBatch  int64  `json:"nextBatch"`
	RerunBatch *int64 `json:"rerunBatch"`
	RerunRange *struct {
		Start []json.RawMessage `json:"start"`
		End   []json.RawMessage `json:"end"`
	} `json:"rerunRange"`
}

// Divergence is one field on which Spark and ckpt disagree for one case and release.
type Divergence struct {
	Case    string `json:"case"`
	Release string `json:"release"`
	Field   string `json:"field"`
	Spark   string `json:"spark"`
	Ckpt    string `json:"ckpt"`
	// Reason says in one line why they differ (kept across regenerations).
	Reason string `json:"reason"`
}

// Key identifies a divergence with its values: a changed value is a different divergence.
func (d Divergence) Key() string {
	return strings.Join([]string{d.Case, d.Release, d.Field, d.Spark, d.Ckpt}, "\x00")
}

// Line is the divergence as one readable line.
func (d Divergence) Line() string {
	return fmt.Sprintf("%s on %s: %s: Spark %q, ckpt %q", d.Case, d.Release, d.Field, d.Spark, d.Ckpt)
}

// SortDivergences orders by release, case, field.
func SortDivergences(ds []Divergence) {
	sort.Slice(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Release != b.Release {
			return a.Release < b.Release
		}
		if a.Case != b.Case {
			return a.Case < b.Case
		}
		return a.Field < b.Field
	})
}

// Line returns the ckpt --spark-version of an exact release: "3.5.7" → "3.5".
func Line(release string) string {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return release
	}
	return parts[0] + "." + parts[1]
}

var (
	uuidRe  = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	groupRe = regexp.MustCompile(`spark-kafka-source-<uuid>--?[0-9]+`)
)

// Normalize replaces what differs between two runs of the same case: the checkpoint and output
// paths (given, longest first), UUIDs (query and run ids), the hash in Kafka group ids.
func Normalize(s string, paths map[string]string) string {
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, p := range keys {
		s = strings.ReplaceAll(s, "file:"+p, paths[p])
		s = strings.ReplaceAll(s, p, paths[p])
	}
	s = uuidRe.ReplaceAllString(s, "<uuid>")
	return groupRe.ReplaceAllString(s, "spark-kafka-source-<uuid>-<hash>")
}

// Compare lists the fields on which ckpt's prediction p disagrees with what Spark did (g):
//   - outcome: Spark "ok" is ckpt "resume", "error" is "fail";
//   - firstBatch: the first batch Spark executed is ckpt's nextBatch (when Spark ran one);
//   - rerunBatch: ckpt's re-run batch is the first batch Spark executed;
//   - rerunRange: that batch read exactly ckpt's start and end offsets, per source;
//   - error, exception: ckpt's error and exception are the message and class of the exception
//     the query failed with (Spark's chain without StreamingQueryException's wrapper), and
//     rootCause.error and rootCause.exception those of the innermost cause, where ckpt does not
//     mark the error inexact; errorClass (always) is the error class of the innermost exception
//     that has one other than STREAM_FAILED. A golden without the chain (recorded before the
//     harness reported it) is checked the old way: ckpt's error is one of the chain's messages.
func Compare(g Golden, p Prediction) []Divergence {
	var out []Divergence
	add := func(field, spark, ckpt string) {
		out = append(out, Divergence{Case: g.Case, Release: g.Release, Field: field, Spark: spark, Ckpt: ckpt})
	}
	s := g.Spark
	sparkOK := s.Outcome == "ok"
	ckptOK := p.Outcome == "resume"
	if sparkOK != ckptOK {
		so, co := s.Outcome, p.Outcome
		if s.Error != nil {
			so += ": " + *s.Error
		}
		if p.Error != nil {
			co += ": " + *p.Error
		}
		add("outcome", so, co)
	}
	switch {
	case len(s.Batches) > 0:
		if first := s.Batches[0].ID; first != p.NextBatch {
			add("firstBatch", strconv.FormatInt(first, 10), strconv.FormatInt(p.NextBatch, 10))
		}
	case sparkOK && ckptOK:
		add("firstBatch", "none", strconv.FormatInt(p.NextBatch, 10))
	}
	if p.RerunBatch != nil && len(s.Batches) > 0 {
		first := s.Batches[0]
		if first.ID != *p.RerunBatch {
			add("rerunBatch", strconv.FormatInt(first.ID, 10), strconv.FormatInt(*p.RerunBatch, 10))
		} else if p.RerunRange != nil {
			for i, src := range first.Sources {
				var ps, pe json.RawMessage
				if i < len(p.RerunRange.Start) {
					ps = p.RerunRange.Start[i]
				}
				if i < len(p.RerunRange.End) {
					pe = p.RerunRange.End[i]
				}
				if !sameJSON(src.StartOffset, ps) {
					add(fmt.Sprintf("rerunRange.start[%d]", i), compact(src.StartOffset), compact(ps))
				}
				if !sameJSON(src.EndOffset, pe) {
					add(fmt.Sprintf("rerunRange.end[%d]", i), compact(src.EndOffset), compact(pe))
				}
			}
		}
	}
	if sparkOK || ckptOK {
		return out
	}
	if len(s.Chain) == 0 {
		if !p.ErrorInexact {
			se, ce := deref(s.Error), deref(p.Error)
			if se != ce && !slices.Contains(s.Causes, ce) {
				add("error", se, ce)
			}
		}
		return out
	}
	top, root := s.Top(), s.Chain[len(s.Chain)-1]
	if !p.ErrorInexact {
		if ce := deref(p.Error); ce != top.Message {
			add("error", top.Message, ce)
		}
		if p.Exception != top.Exception {
			add("exception", top.Exception, p.Exception)
		}
		var re, rx string
		if p.RootCause != nil {
			re, rx = p.RootCause.Error, p.RootCause.Exception
		}
		if re != root.Message {
			add("rootCause.error", root.Message, re)
		}
		if rx != root.Exception {
			add("rootCause.exception", root.Exception, rx)
		}
	}
	if sc := s.ChainErrorClass(); sc != p.ErrorClass {
		add("errorClass", sc, p.ErrorClass)
	}
	return out
}

// streamingQueryException is the wrapper Spark puts around the query thread's exception.
const streamingQueryException = "org.apache.spark.sql.streaming.StreamingQueryException"

// Top is the exception the query failed with: the chain's first that is not Spark's
// StreamingQueryException wrapper (what the query thread threw, and what Spark's driver logs as
// "Query … terminated with error"); the wrapper itself when nothing is under it.
func (r Result) Top() ChainLink {
	for _, l := range r.Chain {
		if l.Exception != streamingQueryException {
			return l
		}
	}
	if len(r.Chain) > 0 {
		return r.Chain[0]
	}
	return ChainLink{}
}

// ChainErrorClass is the error class of the innermost exception of the chain that has one,
// StreamingQueryException's STREAM_FAILED aside; "" when none has.
func (r Result) ChainErrorClass() string {
	for i := len(r.Chain) - 1; i >= 0; i-- {
		if c := deref(r.Chain[i].ErrorClass); c != "" && c != "STREAM_FAILED" {
			return c
		}
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// sameJSON compares two JSON values by meaning (object key order aside); nil is null.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if len(a) > 0 {
		if err := json.Unmarshal(a, &va); err != nil {
			return string(a) == string(b)
		}
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &vb); err != nil {
			return false
		}
	}
	return reflect.DeepEqual(va, vb)
}

// compact renders a JSON value with sorted keys; empty is "null".
func compact(m json.RawMessage) string {
	if len(m) == 0 {
		return "null"
	}
	var v any
	if err := json.Unmarshal(m, &v); err != nil {
		return string(m)
	}
	b, _ := json.Marshal(v) // maps marshal with sorted keys
	return string(b)
}
