package inspect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/ckpt-dev/ckpt/internal/inspect"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// writeBatchesJSON streams `--batches -o json`: the same bytes render.JSON prints for the
// *inspect.BatchList that inspect.Batches returns, written row by row as inspect.EachBatch
// yields them, so a million batches never sit in memory together (only the problems do, to
// close the document with them).
func writeBatchesJSON(ctx context.Context, w io.Writer, store storage.Store, opts inspect.BatchesOptions) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// value writes v as render.JSON would at one level of nesting inside the document.
	value := func(v any, prefix string) error {
		buf.Reset()
		enc.SetIndent(prefix, "  ")
		if err := enc.Encode(v); err != nil {
			return err
		}
		_, err := bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		return err
	}
	bw.WriteString("{\n  \"kind\": ")
	if err := value(inspect.KindBatches, "  "); err != nil {
		return err
	}
	bw.WriteString(",\n  \"uri\": ")
	if err := value(store.URI(), "  "); err != nil {
		return err
	}
	bw.WriteString(",\n  \"batches\": [")
	n := 0
	var problems []inspect.Problem
	err := inspect.EachBatch(ctx, store, opts, func(row *inspect.BatchRow) error {
		if row.Problem != nil {
			problems = append(problems, *row.Problem)
		}
		if n > 0 {
			bw.WriteString(",")
		}
		n++
		bw.WriteString("\n    ")
		return value(row, "    ")
	})
	if err != nil {
		return err
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],\n  \"problems\": [")
	for i := range problems {
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		if err := value(&problems[i], "    "); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}
