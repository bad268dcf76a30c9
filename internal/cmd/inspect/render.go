package inspect

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/inspect"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// maxPartitionColumns is how many Kafka partitions --batches shows as columns; beyond that the
// table would not fit a terminal and only the record sums are shown (JSON has every partition).
const maxPartitionColumns = 8

// maxCell bounds raw offsets shown in a table cell.
const maxCell = 60

func renderSummary(r *render.Renderer, s *inspect.Summary) {
	queryID := r.Warn("missing (no metadata file: Spark starts the query under a new id)")
	switch {
	case s.QueryID != nil:
		queryID = *s.QueryID
	case s.Metadata.Status == "corrupt":
		queryID = r.Bad("corrupt metadata file")
	}
	kv := [][2]string{
		{"Checkpoint", s.URI},
		{"Query id", queryID},
		{"Offsets", logLine(r, s.Offsets)},
		{"Commits", logLine(r, s.Commits)},
	}
	if b := s.LatestBatch; b != nil {
		kv = append(kv, [2]string{"Latest batch", latestLine(r, b)})
		if b.Problem == nil {
			kv = append(kv, [2]string{"Batch time", orDash(b.Time)})
			kv = append(kv, [2]string{"Watermark", msLine(b.WatermarkMs)})
		}
	} else {
		kv = append(kv, [2]string{"Latest batch", "-"})
	}
	if c := s.LatestCommit; c != nil {
		kv = append(kv, [2]string{"Latest commit", commitLine(r, c)})
	}
	r.KV(kv)

	if b := s.LatestBatch; b != nil && len(b.Conf) > 0 {
		r.Println()
		rows := make([][]string, 0, len(b.Conf))
		for _, e := range b.Conf {
			rows = append(rows, []string{e.Key, e.Value})
		}
		r.Table(render.Table{Title: fmt.Sprintf("Conf (batch %d)", b.ID), Headers: []string{"key", "value"}, Rows: rows})
	}

	if len(s.Sources) > 0 {
		r.Println()
		title := "Sources"
		if s.SourcesBatch != nil {
			title = fmt.Sprintf("Sources (offsets of batch %d)", *s.SourcesBatch)
		}
		rows := [][]string{}
		for _, src := range s.Sources {
			rows = append(rows, []string{strconv.Itoa(src.Index), src.Kind, sourceDetail(r, src)})
		}
		r.Table(render.Table{Title: title, Headers: []string{"source", "kind", "detail"}, Rows: rows})
		renderKafkaOffsets(r, s.Sources)
	}

	r.Println()
	if len(s.State.Operators) == 0 {
		r.Println(r.Bold("State"))
		r.Println("none (no state/ directory)")
	} else {
		rows := [][]string{}
		for _, op := range s.State.Operators {
			versions := "-"
			if op.Versions != nil {
				versions = rangeText(op.Versions.Min, op.Versions.Max)
			}
			provider := op.Provider
			if op.UniqueIDs {
				provider += " (checkpoint v2)"
			}
			rows = append(rows, []string{
				strconv.FormatInt(op.ID, 10), orDash(op.Name), provider, strconv.Itoa(op.Partitions),
				orDash(strings.Join(op.Stores, ", ")), versions, strconv.Itoa(op.Files), bytesText(op.Bytes),
			})
		}
		r.Table(render.Table{Title: "State", Headers: []string{"operator", "name", "provider", "partitions", "stores", "versions", "files", "size"}, Rows: rows})
	}

	renderLeftovers(r, s.Leftovers)
	renderProblems(r, s.Problems)
}

// logLine is "0-41, 43-99 (99 files, latest 99); gaps: 42".
func logLine(r *render.Renderer, l inspect.LogInfo) string {
	if l.Count == 0 {
		return "empty"
	}
	s := fmt.Sprintf("%s (%s, latest %d)", inspect.FormatRanges(l.Ranges), plural(l.Count, "file"), *l.Latest)
	if len(l.Gaps) > 0 {
		s += "; " + r.Warn("gaps: "+inspect.FormatRanges(l.Gaps))
	}
	return s
}

func latestLine(r *render.Renderer, b *inspect.BatchInfo) string {
	s := strconv.FormatInt(b.ID, 10)
	if b.Committed {
		s += " (committed)"
	} else {
		s += " " + r.Warn("(not committed: a restart re-runs it)")
	}
	if b.Problem != nil {
		s += " " + r.Bad("corrupt ("+b.Problem.Kind+", see Problems)")
	}
	return s
}

func commitLine(r *render.Renderer, c *inspect.CommitInfo) string {
	s := fmt.Sprintf("%d (v%d", c.ID, c.Version)
	if c.Problem != nil {
		return fmt.Sprintf("%d %s", c.ID, r.Bad("corrupt ("+c.Problem.Kind+", see Problems)"))
	}
	if c.NextBatchWatermarkMs != nil {
		s += fmt.Sprintf(", next watermark %s", msLine(c.NextBatchWatermarkMs))
	}
	if string(c.StateUniqueIDs) != "null" {
		s += ", state unique ids"
	}
	return s + ")"
}

// epoch2000 is 2000-01-01 in epoch ms: below it a watermark is a test value or a small
// event-time unit, and a date would mislead.
const epoch2000 = 946684800000

func msLine(ms *int64) string {
	if ms == nil {
		return "-"
	}
	if *ms < epoch2000 {
		return strconv.FormatInt(*ms, 10)
	}
	return fmt.Sprintf("%d (%s)", *ms, inspect.FormatTime(*ms))
}

func sourceDetail(r *render.Renderer, src inspect.Source) string {
	switch {
	case src.Kafka != nil:
		topics := make([]string, 0, len(src.Kafka.Topics))
		for _, t := range src.Kafka.Topics {
			topics = append(topics, fmt.Sprintf("%s (%d)", t.Topic, len(t.Partitions)))
		}
		s := fmt.Sprintf("topics %s; %s; initial offsets ", strings.Join(topics, ", "), render.Count(int64(src.Kafka.Partitions), "partition"))
		io := src.Kafka.InitialOffsets
		switch {
		case io.Problem != nil:
			s += r.Bad(io.File + " corrupt")
		case io.Present:
			s += io.File + " " + truncate(string(io.Offsets))
		default:
			s += r.Warn(io.File + " missing (batch 0 would re-resolve startingOffsets)")
		}
		return s
	case src.File != nil:
		s := fmt.Sprintf("logOffset %d; log %s: %s", src.File.LogOffset, src.File.Log.Dir, inspect.FormatRanges(src.File.Log.Ranges))
		if len(src.File.Compacts) > 0 {
			s += fmt.Sprintf(" (latest compact %d)", src.File.Compacts[len(src.File.Compacts)-1])
		}
		return s
	case src.Delta != nil:
		d := src.Delta
		where := fmt.Sprintf("changes of version %d", d.ReservoirVersion)
		if d.IsStartingVersion {
			where = fmt.Sprintf("initial snapshot of version %d", d.ReservoirVersion)
		}
		idx := fmt.Sprintf("index %d", d.Index)
		if d.Index == -1 {
			idx = "before its first change (index -1)"
		}
		return fmt.Sprintf("Delta table %s; next: %s, %s", d.ReservoirID, where, idx)
	case src.Kind == inspect.SourceNone:
		return "no offset yet (-)"
	case src.Kind == inspect.SourceMissing:
		return fmt.Sprintf("%s/ exists (%s) but the offsets file has no line for it", src.Dir, render.Count(int64(src.Files), "file"))
	}
	return truncate(string(src.Offset))
}

func renderKafkaOffsets(r *render.Renderer, sources []inspect.Source) {
	rows := [][]string{}
	for _, src := range sources {
		if src.Kafka == nil {
			continue
		}
		initial := map[string]int64{}
		for _, t := range src.Kafka.InitialOffsets.Topics {
			for _, p := range t.Partitions {
				initial[t.Topic+"/"+strconv.Itoa(int(p.Partition))] = p.Offset
			}
		}
		for _, t := range src.Kafka.Topics {
			for _, p := range t.Partitions {
				init := "-"
				if v, ok := initial[t.Topic+"/"+strconv.Itoa(int(p.Partition))]; ok {
					init = kafkaOffsetText(v)
				}
				rows = append(rows, []string{strconv.Itoa(src.Index), t.Topic, strconv.Itoa(int(p.Partition)), kafkaOffsetText(p.Offset), init})
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	r.Println()
	r.Table(render.Table{Title: "Kafka offsets", Headers: []string{"source", "topic", "partition", "next offset", "initial"}, Rows: rows})
}

// kafkaOffsetText names Kafka's symbolic offsets.
func kafkaOffsetText(v int64) string {
	switch v {
	case -1:
		return "-1 (latest)"
	case -2:
		return "-2 (earliest)"
	}
	return strconv.FormatInt(v, 10)
}

func renderLeftovers(r *render.Renderer, lo inspect.Leftovers) {
	if len(lo.Temps)+len(lo.OrphanCRCs) == 0 {
		return
	}
	r.Println()
	rows := [][]string{}
	for _, t := range lo.Temps {
		rows = append(rows, []string{t.Path, strconv.FormatInt(t.Size, 10), "temp file of an interrupted write"})
	}
	for _, c := range lo.OrphanCRCs {
		rows = append(rows, []string{c.Path, strconv.FormatInt(c.Size, 10), "checksum of a file that is gone"})
	}
	r.Table(render.Table{Title: "Leftovers", Headers: []string{"path", "size", "what"}, Rows: rows})
}

func renderProblems(r *render.Renderer, ps []inspect.Problem) {
	if len(ps) == 0 {
		return
	}
	r.Println()
	rows := [][]string{}
	for _, p := range ps {
		line := "-"
		if p.Line > 0 {
			line = strconv.Itoa(p.Line)
		}
		msg := "expected " + p.Expected + ", got " + p.Got
		if p.Spark != "" {
			msg += " (Spark: " + p.Spark + ")"
		}
		rows = append(rows, []string{p.File, line, p.Kind, msg})
	}
	r.Table(render.Table{Title: r.Bad("Problems"), Headers: []string{"file", "line", "kind", "problem"}, Rows: rows})
}

func renderBatches(r *render.Renderer, l *inspect.BatchList) {
	// Columns: one per Kafka partition when few, one per non-Kafka source.
	type col struct {
		src   int
		topic string
		part  int32
	}
	var cols []col
	seen := map[col]bool{}
	kafkaSources := map[int]bool{}
	otherSources := map[int]bool{}
	for _, b := range l.Batches {
		for _, s := range b.Sources {
			if s.Kind != inspect.SourceKafka {
				otherSources[s.Index] = true
				continue
			}
			kafkaSources[s.Index] = true
			for _, p := range s.Partitions {
				c := col{s.Index, p.Topic, p.Partition}
				if !seen[c] {
					seen[c] = true
					cols = append(cols, c)
				}
			}
		}
	}
	if len(cols) > maxPartitionColumns {
		cols = nil
	}
	slices.SortFunc(cols, func(a, b col) int {
		return cmp.Or(cmp.Compare(a.src, b.src), strings.Compare(a.topic, b.topic), cmp.Compare(a.part, b.part))
	})
	others := sortedKeys(otherSources)
	// Plain tables upper-case their headers and topic names are case-sensitive, so columns are
	// labelled p<N> (one topic) or t<K>/p<N>, with the topics named in the title.
	type srcTopic struct {
		src   int
		topic string
	}
	var topics []srcTopic
	topicNo := map[srcTopic]int{}
	for _, c := range cols {
		st := srcTopic{c.src, c.topic}
		if _, ok := topicNo[st]; !ok {
			topics = append(topics, st)
			topicNo[st] = len(topics)
		}
	}
	title := ""
	var legend []string
	for i, st := range topics {
		name := st.topic
		if len(kafkaSources) > 1 {
			name = fmt.Sprintf("%s (source %d)", st.topic, st.src)
		}
		if len(topics) > 1 {
			name = fmt.Sprintf("t%d = %s", i+1, name)
		}
		legend = append(legend, name)
	}
	if len(legend) > 0 {
		title = "Kafka end offsets (+records read) of " + strings.Join(legend, ", ")
	}
	headers := []string{"batch", "committed", "time", "watermark"}
	for _, c := range cols {
		h := fmt.Sprintf("p%d", c.part)
		if len(topics) > 1 {
			h = fmt.Sprintf("t%d/p%d", topicNo[srcTopic{c.src, c.topic}], c.part)
		}
		headers = append(headers, h)
	}
	for _, i := range others {
		headers = append(headers, fmt.Sprintf("source %d", i))
	}
	if len(kafkaSources) > 0 {
		headers = append(headers, "records")
	}
	rows := make([][]string, 0, len(l.Batches))
	for _, b := range l.Batches {
		committed := "yes"
		if !b.Committed {
			committed = r.Warn("no")
		}
		row := []string{strconv.FormatInt(b.ID, 10), committed, orDash(b.Time), "-"}
		if b.WatermarkMs != nil {
			row[3] = strconv.FormatInt(*b.WatermarkMs, 10)
		}
		if !b.HasOffsets {
			row[2] = r.Warn("no offsets file")
		}
		if b.Problem != nil {
			row[2] = r.Bad("corrupt: " + b.Problem.Kind)
		}
		cells := map[col]string{}
		srcCells := map[int]string{}
		for _, s := range b.Sources {
			if s.Kind != inspect.SourceKafka {
				srcCells[s.Index] = truncate(string(s.Offset))
				continue
			}
			for _, p := range s.Partitions {
				cell := strconv.FormatInt(p.End, 10)
				if p.Records != nil {
					cell += fmt.Sprintf(" (+%d)", *p.Records)
				}
				cells[col{s.Index, p.Topic, p.Partition}] = cell
			}
		}
		for _, c := range cols {
			row = append(row, orDash(cells[c]))
		}
		for _, i := range others {
			row = append(row, orDash(srcCells[i]))
		}
		if len(kafkaSources) > 0 {
			rec := "-"
			if b.Records != nil {
				rec = strconv.FormatInt(*b.Records, 10)
			}
			row = append(row, rec)
		}
		rows = append(rows, row)
	}
	// On a narrow terminal the watermark, records and committed columns give way first, then
	// the partitions from the last; BATCH and TIME stay, whole.
	drop := []int{0, 3, 0, 1}
	for i := range len(headers) - len(drop) {
		drop = append(drop, len(headers)+3-i)
	}
	if len(kafkaSources) > 0 {
		drop[len(drop)-1] = 2
	}
	r.Table(render.Table{Title: title, Headers: headers, Rows: rows, Drop: drop})
	renderProblems(r, l.Problems)
}

func renderBatch(r *render.Renderer, d *inspect.BatchDetail) {
	kv := [][2]string{{"Batch", strconv.FormatInt(d.ID, 10)}}
	if o := d.Offsets; o != nil {
		if o.Problem != nil {
			kv = append(kv, [2]string{"Offsets", fmt.Sprintf("offsets/%d %s", d.ID, r.Bad("corrupt"))})
		} else {
			kv = append(kv,
				[2]string{"Offsets", fmt.Sprintf("offsets/%d (v%d)", d.ID, o.Version)},
				[2]string{"Batch time", orDash(o.Time)},
				[2]string{"Watermark", msLine(o.WatermarkMs)},
			)
		}
	} else {
		kv = append(kv, [2]string{"Offsets", r.Warn(fmt.Sprintf("no offsets/%d", d.ID))})
	}
	if d.PreviousBatch != nil {
		kv = append(kv, [2]string{"Previous batch", strconv.FormatInt(*d.PreviousBatch, 10)})
	}
	if c := d.Commit; c != nil {
		kv = append(kv, [2]string{"Commit", "commits/" + commitLine(r, c)})
	} else {
		kv = append(kv, [2]string{"Commit", r.Warn("not committed")})
	}
	r.KV(kv)

	if o := d.Offsets; o != nil && o.Problem == nil {
		if len(o.Conf) > 0 {
			r.Println()
			rows := make([][]string, 0, len(o.Conf))
			for _, e := range o.Conf {
				rows = append(rows, []string{e.Key, e.Value})
			}
			r.Table(render.Table{Title: "Conf", Headers: []string{"key", "value"}, Rows: rows})
		}
		for i, raw := range o.Sources {
			kind := ""
			var src *inspect.BatchSource
			if i < len(d.Sources) {
				src = &d.Sources[i]
				kind = " (" + src.Kind + ")"
			}
			r.Println()
			r.Println(r.Bold(fmt.Sprintf("Source %d%s", i, kind)))
			r.Println(pretty(raw))
			if src != nil && len(src.Partitions) > 0 {
				rows := [][]string{}
				for _, p := range src.Partitions {
					start, rec := "-", "-"
					if p.Start != nil {
						start = strconv.FormatInt(*p.Start, 10)
					}
					if p.Records != nil {
						rec = strconv.FormatInt(*p.Records, 10)
					}
					rows = append(rows, []string{p.Topic, strconv.Itoa(int(p.Partition)), start, strconv.FormatInt(p.End, 10), rec})
				}
				r.Table(render.Table{Headers: []string{"topic", "partition", "start", "end", "records"}, Rows: rows})
			}
		}
	}
	if c := d.Commit; c != nil && c.Problem == nil && string(c.StateUniqueIDs) != "null" {
		r.Println()
		r.Println(r.Bold("State unique ids (commit)"))
		r.Println(pretty(c.StateUniqueIDs))
	}
	renderProblems(r, d.Problems)
}

func renderSinkLog(r *render.Renderer, s *inspect.SinkLogReport) {
	l := s.SinkLog
	loc := s.URI
	if l.Dir != "" {
		loc = strings.TrimRight(loc, "/") + "/" + l.Dir
	}
	kv := [][2]string{{"Sink log", loc}}
	if l.Latest == nil {
		kv = append(kv, [2]string{"Batches", "empty"})
		r.KV(kv)
		return
	}
	batches := fmt.Sprintf("%s (%s, latest %d)", inspect.FormatRanges(l.Ranges), plural(len(l.Batches), "file"), *l.Latest)
	compacts := "none"
	if len(l.Compacts) > 0 {
		compacts = joinInts(l.Compacts)
	}
	interval := strconv.Itoa(l.CompactInterval)
	switch l.CompactIntervalSource {
	case "default":
		interval += " (the default: no compact file yet)"
	case "derived":
		interval += fmt.Sprintf(" (derived from %d.compact)", l.Compacts[len(l.Compacts)-1])
	default:
		interval += " (difference of the two latest compact files)"
	}
	kv = append(kv,
		[2]string{"Batches", batches},
		[2]string{"Compact files", compacts},
		[2]string{"Compact interval", interval},
		[2]string{"Read by allFiles", inspect.FormatRanges(l.ValidBatches)},
	)
	if len(l.Missing) > 0 {
		kv = append(kv, [2]string{"Missing", r.Bad(inspect.FormatRanges(l.Missing) + " (Spark's allFiles fails: the file doesn't exist)")})
	}
	entries := strconv.FormatInt(l.Entries, 10)
	if l.Deletes > 0 {
		entries += " (" + plural(int(l.Deletes), "delete") + ")"
	}
	kv = append(kv,
		[2]string{"Entries", entries},
		[2]string{"Live files", strconv.FormatInt(l.Files, 10)},
		[2]string{"Live bytes", bytesText(l.Bytes)},
	)
	r.KV(kv)
	renderLeftovers(r, s.Leftovers)
	renderProblems(r, s.Problems)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func rangeText(lo, hi int64) string {
	if lo == hi {
		return strconv.FormatInt(lo, 10)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

func joinInts(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ", ")
}

// bytesText is exact bytes plus a human size: exact for scripts and comparisons with ls.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%d (%.1f %ciB)", n, float64(n)/float64(div), "KMGTPE"[exp])
}

func truncate(s string) string {
	if len(s) <= maxCell {
		return s
	}
	return s[:maxCell-3] + "..."
}

func pretty(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

func sortedKeys(m map[int]bool) []int {
	return slices.Sorted(maps.Keys(m))
}
