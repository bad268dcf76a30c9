package lag

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// MetricsContentType is the Content-Type of the Prometheus text exposition format 0.0.4.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// metric is one family: its name, help and type line, and its samples.
type metric struct {
	name, help string
	samples    []sample
}

type sample struct {
	labels [][2]string
	value  float64
}

// The metric families, in output order. Every partition series carries checkpoint, source,
// topic and partition labels; checkpoint-level series carry checkpoint.
var metricHelp = [][2]string{
	{"ckpt_up", "1 when the last refresh could read the broker, 0 when it could not."},
	{"ckpt_checkpoint_up", "1 when the checkpoint could be read, 0 when it could not."},
	{"ckpt_lag_records", "Records between the checkpoint's committed offset and the partition's latest offset (a new partition: from its earliest offset)."},
	{"ckpt_lag_seconds", "Record time between the first unread record and the last record of the partition (0 with no lag)."},
	{"ckpt_committed_offset", "Next offset the query reads: the end offset of the latest committed batch."},
	{"ckpt_inflight_offset", "End offset of the batch planned but not committed (only while one is in flight)."},
	{"ckpt_latest_offset", "The partition's latest offset (high watermark) on the broker."},
	{"ckpt_log_start_offset", "The partition's earliest offset on the broker (log start)."},
	{"ckpt_last_commit_batch", "Id of the latest batch in the commit log."},
	{"ckpt_last_commit_age_seconds", "Seconds since the latest commit file was written."},
	{"ckpt_inflight_batch", "Id of the batch planned but not committed (only while one is in flight)."},
	{"ckpt_lag_records_total", "Sum of ckpt_lag_records over the checkpoint's partitions."},
	{"ckpt_issue", "1 for each problem the next batch will hit on the broker; code is the doctor code (offsets-out-of-range, topic-recreated, partitions-removed, partitions-added, topic-missing)."},
}

// WriteMetrics writes r in the Prometheus text exposition format, with HELP and TYPE lines; all
// metrics are gauges. r nil (the broker could not be read) writes ckpt_up 0 only. A value
// that is unknown (no timestamp, no commit yet) has no sample.
func WriteMetrics(w io.Writer, r *Report) error {
	fams := map[string]*metric{}
	for _, h := range metricHelp {
		fams[h[0]] = &metric{name: h[0], help: h[1]}
	}
	add := func(name string, v float64, labels ...[2]string) {
		fams[name].samples = append(fams[name].samples, sample{labels, v})
	}
	if r == nil {
		add("ckpt_up", 0)
	} else {
		add("ckpt_up", 1)
		for _, c := range r.Checkpoints {
			ck := [2]string{"checkpoint", c.Checkpoint}
			if c.Error != "" {
				add("ckpt_checkpoint_up", 0, ck)
				continue
			}
			add("ckpt_checkpoint_up", 1, ck)
			if c.LastCommitBatch != nil {
				add("ckpt_last_commit_batch", float64(*c.LastCommitBatch), ck)
			}
			if c.LastCommitAgeSeconds != nil {
				add("ckpt_last_commit_age_seconds", *c.LastCommitAgeSeconds, ck)
			}
			if c.InFlightBatch != nil {
				add("ckpt_inflight_batch", float64(*c.InFlightBatch), ck)
			}
			add("ckpt_lag_records_total", float64(c.LagRecords), ck)
			for _, p := range c.Partitions {
				ls := [][2]string{ck, {"source", strconv.Itoa(p.Source)}, {"topic", p.Topic}, {"partition", strconv.Itoa(int(p.Partition))}}
				for _, v := range []struct {
					name string
					i    *int64
					f    *float64
				}{
					{name: "ckpt_lag_records", i: p.LagRecords},
					{name: "ckpt_lag_seconds", f: p.LagSeconds},
					{name: "ckpt_committed_offset", i: p.Committed},
					{name: "ckpt_inflight_offset", i: p.InFlight},
					{name: "ckpt_latest_offset", i: p.Latest},
					{name: "ckpt_log_start_offset", i: p.LogStart},
				} {
					switch {
					case v.i != nil:
						add(v.name, float64(*v.i), ls...)
					case v.f != nil:
						add(v.name, *v.f, ls...)
					}
				}
			}
			for _, is := range c.Issues {
				add("ckpt_issue", 1, ck, [2]string{"topic", is.Topic}, [2]string{"partition", strconv.Itoa(int(is.Partition))}, [2]string{"code", is.Code})
			}
		}
	}
	bw := bufio.NewWriter(w)
	for _, h := range metricHelp {
		m := fams[h[0]]
		if len(m.samples) == 0 {
			continue
		}
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s gauge\n", m.name, escapeHelp(m.help), m.name)
		seen := map[string]bool{}
		for _, s := range m.samples {
			line := m.name + labelString(s.labels)
			// Two sources of one checkpoint on one partition would repeat a series: Prometheus
			// rejects the whole scrape then, so keep the first.
			if seen[line] {
				continue
			}
			seen[line] = true
			fmt.Fprintf(bw, "%s %s\n", line, formatValue(s.value))
		}
	}
	return bw.Flush()
}

func labelString(ls [][2]string) string {
	if len(ls) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l[0])
		b.WriteString(`="`)
		b.WriteString(escapeLabel(l[1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// escapeLabel escapes a label value: backslash, double quote and line feed.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// escapeHelp escapes HELP text: backslash and line feed.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		// Offsets print as integers, not 1.2345678e+07.
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Handler serves the collector's metrics on /metrics (any other path gets a pointer to it).
// Each scrape calls Collect, so the CacheTTL bounds how often the broker and the checkpoints
// are read. A broker failure is served as ckpt_up 0 (HTTP 200), so that alerting sees it.
func Handler(c *Collector) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		rep, err := c.Collect(r.Context())
		if err != nil {
			rep = nil
		}
		w.Header().Set("Content-Type", MetricsContentType)
		if err != nil {
			// The reason, for whoever curls the endpoint; Prometheus ignores comments.
			fmt.Fprintf(w, "# ckpt: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		}
		_ = WriteMetrics(w, rep)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ckpt lag: metrics at /metrics")
	})
	return mux
}
