package replay

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// printTable writes the human form: the verdict first, then the re-run per
// source and partition, skipped batches, sink, warnings, Spark's driver log,
// other releases, and what to do next.
// b holds the broker's counts and issues with --bootstrap-server, else nil.
func printTable(r *render.Renderer, opts *Options, res *recovery.Result, b *output) {
	verdict := res.Verdict()
	if opts.WhatIf != "" {
		verdict = "After " + opts.WhatIf + ": " + verdict
	}
	if res.Failed() {
		r.Println(r.Bad(verdict))
	} else {
		r.Println(r.Good(verdict))
	}
	r.Println()

	loc := opts.Location
	if opts.WhatIf != "" {
		loc += " (as it would be after the crash)"
	}
	kv := [][2]string{
		{"checkpoint", loc},
		{"engine", fmt.Sprintf("%s, Spark %s", res.Mode, res.SparkVersion)},
		{"latest offsets", optID(res.LatestOffsets)},
		{"latest commit", optID(res.LatestCommit)},
	}
	if lines := opts.Detected.Lines(); len(lines) > 0 {
		// Right under the engine it chose: why the engine and release are what they are.
		det := make([][2]string, len(lines))
		for i, l := range lines {
			det[i] = [2]string{"detected", strings.TrimPrefix(l, "detected ")}
		}
		kv = append(kv[:2], append(det, kv[2:]...)...)
	}
	if res.NextBatch >= 0 {
		kv = append(kv, [2]string{"first batch", strconv.FormatInt(res.NextBatch, 10)})
	}
	if rc := res.RootCause; rc != nil && (rc.Exception != res.Exception || rc.Error != res.ErrorText()) {
		// The verdict names the exception the query fails with; under it, what caused it.
		root := firstLine(rc.Error)
		if rc.Exception != "" {
			root = rc.Exception + ": " + root
		}
		kv = append(kv, [2]string{"root cause", root})
	}
	if res.ErrorClass != "" {
		kv = append(kv, [2]string{"error class", res.ErrorClass})
	}
	if st := res.State; st != nil {
		if len(st.Loads) > 0 || st.Failure != nil {
			kv = append(kv, [2]string{"state", stateLine(st)})
		}
		for _, l := range st.Lines() {
			kv = append(kv, [2]string{"state", render.Escape(l)})
		}
	}
	if b != nil {
		kv = append(kv, [2]string{"broker", brokerLine(b.Broker)})
	}
	if res.LatestOffsets != nil && !res.Failed() {
		kv = append(kv, [2]string{"watermark", msTime(res.WatermarkMs)})
		if res.RerunBatch != nil {
			kv = append(kv, [2]string{"batch timestamp", msTime(res.BatchTimestampMs)})
		}
	}
	r.KV(kv)
	if bug := res.SparkBug; bug != nil {
		// First after the facts: the failure is Spark's, and what was written before it.
		r.Println()
		r.Println(r.Warn(fmt.Sprintf("Spark bug %s (Spark %s):", bug.ID, strings.Join(bug.Releases, ", "))))
		r.Println("  " + bug.Summary + ".")
		written := "its output reached the sink"
		if bug.CommitWritten {
			written += " and its commit was written"
		} else {
			written += "; its commit may not have been written"
		}
		r.Printf("  Batch %d ran before the failure: %s.\n", bug.Batch, written)
		r.Println("  What to do: " + bug.Fix + ".")
	}

	if res.RerunRange != nil {
		r.Println()
		r.Table(rerunTable(res, b))
		if b != nil && b.Broker.RerunRecords != nil && b.Broker.BrokerRecords != nil && *b.Broker.RerunRecords != *b.Broker.BrokerRecords {
			r.Printf("%s %d of the %s of the re-run still exist on the broker\n", r.Warn("On the broker:"), *b.Broker.BrokerRecords, render.Count(int64(*b.Broker.RerunRecords), "record"))
		}
	}
	if res.Skipped != nil {
		r.Println()
		r.Printf("%s %s\n", r.Bad("Data at risk:"), res.SkippedText())
	}
	if res.Sink != nil {
		r.Println()
		label := "File sink:"
		if res.Sink.Kind == recovery.SinkKindDelta {
			label = "Delta sink:"
		}
		r.Printf("%s %s: %s\n", r.Bold(label), res.Sink.Status, res.Sink.Message)
	}
	for _, d := range res.Delta {
		r.Println()
		r.Printf("%s %s: %s\n", r.Bold(fmt.Sprintf("Delta source %d (%s):", d.Source, d.Location)), d.Status, d.Message)
	}
	if len(res.Warnings) > 0 {
		r.Println()
		r.Println(r.Warn("Warnings:"))
		for _, w := range res.Warnings {
			r.Printf("  - %s\n", w)
		}
	}
	if len(res.DriverLog) > 0 {
		r.Println()
		r.Println(r.Bold("Spark driver log:"))
		for _, l := range res.DriverLog {
			r.Printf("  %s\n", l)
		}
	}
	if len(res.Releases) > 0 {
		r.Println()
		r.Println(r.Bold("Other Spark releases:"))
		for _, n := range res.Releases {
			r.Printf("  %s: %s\n", versions(n.Versions), n.Summary)
		}
	}
	if res.Failed() {
		r.Println()
		r.Printf("Next: ckpt doctor %s\n", strings.Join(append([]string{opts.Location}, opts.Broker.CommandArgs()...), " "))
	}
}

// rerunTable has one row per Kafka partition and one per other source; with a broker, a column
// with the records that still exist there.
func rerunTable(res *recovery.Result, b *output) render.Table {
	t := render.Table{
		Title:   fmt.Sprintf("Re-run of batch %d", *res.RerunBatch),
		Headers: []string{"source", "partition", "start", "end", "records", "note"},
	}
	if b != nil {
		t.Headers = []string{"source", "partition", "start", "end", "records", "on broker", "note"}
	}
	row := func(cells ...string) []string {
		if b == nil {
			return append(cells[:5:5], cells[6])
		}
		return cells
	}
	kafka := map[int]bool{}
	for _, k := range res.Kafka {
		kafka[k.Source] = true
	}
	for i := range res.RerunRange.End {
		if kafka[i] {
			for j, k := range res.Kafka {
				if k.Source != i {
					continue
				}
				onBroker, note := "-", k.Note
				if b != nil && j < len(b.Kafka) {
					onBroker, note = brokerCells(b.Kafka[j])
				}
				t.Rows = append(t.Rows, row(strconv.Itoa(i), fmt.Sprintf("%s-%d", k.Topic, k.Partition),
					optNum(k.Start), optNum(k.End), optNum(k.Records), onBroker, note))
			}
			continue
		}
		note := ""
		if i < len(res.StartFromInitial) && res.StartFromInitial[i] {
			note = "starts from the source's initial offsets"
		}
		t.Rows = append(t.Rows, row(strconv.Itoa(i), "-", raw(res.RerunRange.Start[i]), raw(res.RerunRange.End[i]), "-", "-", note))
	}
	return t
}

// brokerCells are the ON BROKER cell and the note of one partition: the planner's note, then
// what the broker count says.
func brokerCells(p partitionRange) (string, string) {
	if p.BrokerRecords == nil {
		return "?", p.Note
	}
	n := strconv.FormatInt(*p.BrokerRecords, 10)
	if p.Exact {
		n += " (exact)"
	}
	var notes []string
	if p.Note != "" {
		notes = append(notes, p.Note)
	}
	switch {
	case p.LogStart == nil:
		notes = append(notes, "not on the broker")
	default:
		if deref(p.AgedOut) > 0 {
			notes = append(notes, fmt.Sprintf("%d deleted (the log starts at %d)", *p.AgedOut, *p.LogStart))
		}
		if deref(p.BeyondEnd) > 0 {
			notes = append(notes, fmt.Sprintf("%d beyond the log end %d", *p.BeyondEnd, *p.LogEnd))
		}
	}
	return n, strings.Join(notes, "; ")
}

// brokerLine says which broker was asked and what the prediction assumes.
func brokerLine(b *brokerView) string {
	s := fmt.Sprintf("%s (failOnDataLoss=%t", b.BootstrapServers, b.FailOnDataLoss)
	if b.Exact {
		s += ", exact counts"
	}
	return s + ")"
}

func raw(b []byte) string {
	s := string(b)
	if s == "" || s == "null" {
		return "-"
	}
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

func optID(v *int64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatInt(*v, 10)
}

func optNum(v *int64) string {
	if v == nil {
		return "?"
	}
	return strconv.FormatInt(*v, 10)
}

// msTime shows epoch milliseconds with their UTC time; 0 stays 0.
func msTime(ms int64) string {
	if ms == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", ms, time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z"))
}

// ranges compresses ascending ids: "5..6, 9".
func ranges(ids []int64) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.FormatInt(ids[i], 10))
		} else {
			parts = append(parts, fmt.Sprintf("%d..%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// versions compresses a release list: "2.2–2.4", "3.0–3.5, 4.1".
func versions(vs []string) string {
	index := map[string]int{}
	for i, v := range recovery.SparkVersions {
		index[v] = i
	}
	var parts []string
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && index[vs[j+1]] == index[vs[j]]+1 {
			j++
		}
		if i == j {
			parts = append(parts, vs[i])
		} else {
			parts = append(parts, vs[i]+"–"+vs[j])
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// stateLine says what the first batch loads from the state stores and where it fails.
func stateLine(st *recovery.StateLoad) string {
	how := "files listed, not read (--state list)"
	if st.Checked {
		how = "files read"
	}
	s := fmt.Sprintf("version %d in %s (%s)", st.Version, render.Count(int64(len(st.Loads)), "partition"), how)
	for _, v := range st.Schemas {
		what := "its rows do not fit it; a dropDuplicates store's values, which Spark does not check"
		if v.Fails {
			what = "its rows do not fit it; Spark's schema check fails"
		}
		s += fmt.Sprintf("; operator %d store %s: %s: %s", v.Operator, render.Escape(v.Store), render.Escape(v.File), what)
	}
	if f := st.Failure; f != nil {
		s += fmt.Sprintf("; operator %d store %s partition %d fails on %s (%s)", f.Operator, f.Store, f.Partition, f.File, f.Damage)
	}
	return s
}
