// Reading a batch's offset ranges from the source and applying the transform.

package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// read reads (from, end] of every partition in parallel and applies the transform. With a
// streaming sink (stream != nil) each transformed chunk goes to it at once and the returned
// batch holds only the counts; beforeWrite, if set, runs before each write to it (it returns at
// once after the first).
func (e *Engine) read(ctx context.Context, id int64, from, end logformat.KafkaOffsets, stream StreamingSink, midSink func(), beforeWrite func(context.Context) error) (*Batch, error) {
	prog := e.q.Program
	identity := prog.Identity()
	project := prog.Projects()
	sel, plainSel := prog.KafkaSelection()
	if plainSel {
		project = false // keep the rows unboxed; Part.Select picks the columns
		identity = !prog.HasFilter()
	}
	var mu sync.Mutex
	var inputRows, outputRows atomic.Int64
	var midOnce sync.Once
	parts := map[logformat.TopicPartition]*Part{}
	err := e.src.Read(ctx, from, end, e.parallelism, func(tp logformat.TopicPartition, rows []transform.Row) error {
		inputRows.Add(int64(len(rows)))
		var kept []transform.Row
		var values [][]any
		if identity {
			kept = rows
		} else {
			ev := e.evalPool.Get().(*transform.Evaluator)
			defer e.evalPool.Put(ev)
			for i := range rows {
				ok, err := ev.Keep(&rows[i])
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				if project {
					v, err := ev.Project(&rows[i], nil)
					if err != nil {
						return err
					}
					values = append(values, v)
				} else {
					kept = append(kept, rows[i])
				}
			}
		}
		if stream != nil {
			chunk := &Part{Topic: tp.Topic, Partition: tp.Partition, Rows: kept, Values: values, Select: sel}
			if project && values == nil {
				chunk.Values = [][]any{}
			}
			if beforeWrite != nil {
				if err := beforeWrite(ctx); err != nil {
					return err
				}
			}
			if err := stream.WritePart(ctx, id, prog.Columns(), chunk); err != nil {
				return err
			}
			outputRows.Add(int64(chunk.Len()))
			if midSink != nil && chunk.Len() > 0 {
				midOnce.Do(midSink)
			}
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		p := parts[tp]
		if p == nil {
			p = &Part{Topic: tp.Topic, Partition: tp.Partition, Select: sel}
			parts[tp] = p
		}
		if project {
			if p.Values == nil {
				p.Values = values
			} else {
				p.Values = append(p.Values, values...)
			}
			if p.Values == nil {
				p.Values = [][]any{}
			}
		} else if identity {
			// kept is the source's slice, valid during this call only (the Kafka source
			// reuses it): the batch keeps a copy of the rows (their bytes are not copied).
			p.Rows = append(p.Rows, kept...)
		} else if p.Rows == nil {
			p.Rows = kept // built above, ours to keep
		} else {
			p.Rows = append(p.Rows, kept...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	b := &Batch{ID: id, Columns: prog.Columns(), InputRows: inputRows.Load(), NumRows: outputRows.Load()}
	for _, p := range parts {
		if p.Len() == 0 {
			continue
		}
		b.Parts = append(b.Parts, *p)
		b.NumRows += int64(p.Len())
	}
	slices.SortFunc(b.Parts, func(x, y Part) int {
		if c := strings.Compare(x.Topic, y.Topic); c != 0 {
			return c
		}
		return int(x.Partition) - int(y.Partition)
	})
	return b, nil
}
