// Windows and the watermark in a streaming aggregation's state: the window key column
// (TimeWindowing's "window" attribute), late rows and eviction (StateStoreSaveExec with a
// watermark), and the event-time statistics of a batch (EventTimeWatermarkExec).

package engine

import (
	"encoding/json"
	"time"

	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// eviction is the watermark side of an aggregation's state.
type eviction struct {
	// on: the query has a watermark; evIx is the grouping column carrying it (-1: none, so
	// nothing is late or evicted); window is the window() column (-1: none).
	on       bool
	complete bool
	evIx     int
	window   int
	delayMs  int64
	// lateUs and evictUs are the running batch's watermarks in microseconds: offsets/N-1's
	// and offsets/N's batchWatermarkMs.
	lateUs, evictUs int64
	// events and maxMs are the batch's event-time statistics: rows and the latest
	// timestamp in milliseconds.
	events, maxMs int64
}

func newEviction(q *query.Resolved) eviction {
	v := eviction{evIx: -1, window: -1, delayMs: q.WatermarkDelayMs, on: q.WatermarkColumn != "", complete: q.OutputMode == query.OutputComplete}
	if q.Grouping.Window != nil {
		v.window = q.Grouping.Window.Key
	}
	if v.on {
		v.evIx = q.Grouping.EventTimeKey(q.WatermarkColumn)
	}
	return v
}

// keyField names the window column and gives the event-time column the metadata Spark's
// schema file holds (checked against Spark 3.5-4.2 by the live window test).
func (v *eviction) keyField(i int, f *statefmt.Field) {
	m := map[string]any{}
	if i == v.window {
		f.Name = "window"
		m["spark.timeWindow"] = true
	}
	if i == v.evIx {
		m["spark.watermarkDelayMs"] = v.delayMs
	}
	if len(m) > 0 {
		// encoding/json sorts the keys: spark.timeWindow, then spark.watermarkDelayMs, the
		// order Spark writes them.
		f.Metadata, _ = json.Marshal(m)
	}
}

// windowType is TimeWindow's data type.
func windowType() *statefmt.Type {
	ts := &statefmt.Type{Name: "timestamp"}
	return statefmt.Struct(statefmt.Field{Name: "start", Type: ts, Nullable: true}, statefmt.Field{Name: "end", Type: ts, Nullable: true})
}

// windowKey is the state value of window [w[0], w[1]) (microseconds).
func windowKey(w [2]int64) *statefmt.Object {
	return &statefmt.Object{Names: []string{"start", "end"}, Values: []any{statefmt.Timestamp(w[0]), statefmt.Timestamp(w[1])}}
}

func windowOutput(o *statefmt.Object) any {
	if len(o.Values) != 2 {
		return o
	}
	s, ok1 := o.Values[0].(statefmt.Timestamp)
	e, ok2 := o.Values[1].(statefmt.Timestamp)
	if !ok1 || !ok2 {
		return o
	}
	return transform.Window{Start: time.UnixMicro(int64(s)).UTC(), End: time.UnixMicro(int64(e)).UTC()}
}

// eventUs is the event time of an event-time key value: a window's end, or the timestamp.
func eventUs(v any) (int64, bool) {
	switch x := v.(type) {
	case statefmt.Timestamp:
		return int64(x), true
	case *statefmt.Object:
		if len(x.Values) == 2 {
			if e, ok := x.Values[1].(statefmt.Timestamp); ok {
				return int64(e), true
			}
		}
	}
	return 0, false
}

// begin starts a batch with its late-rows and eviction watermarks (milliseconds).
func (v *eviction) begin(lateMs, evictMs int64) {
	v.lateUs, v.evictUs = lateMs*1000, evictMs*1000
	v.events, v.maxMs = 0, 0
}

// observe adds a row kept by the filter to the batch's event-time statistics.
func (v *eviction) observe(r *transform.Row) {
	if !v.on {
		return
	}
	ms := r.Timestamp.UnixMicro() / 1000
	if v.events == 0 || ms > v.maxMs {
		v.maxMs = ms
	}
	v.events++
}

// late reports whether a group's key is at or below the late-rows watermark (append and
// update mode: StateStoreSaveExec in complete mode puts every row).
func (v *eviction) late(key []any) bool {
	if v.evIx < 0 || v.complete {
		return false
	}
	t, ok := eventUs(key[v.evIx])
	return ok && t <= v.lateUs
}

// evict marks the groups whose event time is at or below the eviction watermark (append and
// update mode; complete mode keeps every group).
func (v *eviction) evict(groups map[string]*stateEntry) {
	if v.evIx < 0 || v.complete {
		return
	}
	for _, ent := range groups {
		if t, ok := eventUs(ent.key.Values[v.evIx]); ok && t <= v.evictUs {
			ent.gone = true
		}
	}
}
