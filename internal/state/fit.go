package state

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// fitRows is how many rows of each partition a read checks against the schema byte for byte
// (statefmt.FitRow). Rendering a row checks only that what it reads lies inside the row, so a
// schema file of another operator whose rows happen to be long enough renders garbage; a
// swapped schema misfits every row, so the first rows of each partition tell, at a fraction of
// the cost of checking them all.
const fitRows = 16

// fit checks key and value against the family's schema while the partition's first fitRows
// rows last.
func (r *Reader) fit(part int, key, value []byte, deleted bool, f *statefmt.ColumnFamily) error {
	if part != r.fitPart {
		r.fitPart, r.fitLeft = part, fitRows
	}
	if r.fitLeft == 0 {
		return nil
	}
	r.fitLeft--
	if err := statefmt.FitRow(key, f.Key); err != nil {
		return r.schemaErr(err, "key", f.Key)
	}
	if !deleted {
		if err := statefmt.FitRow(value, f.Value); err != nil {
			return r.schemaErr(err, "value", f.Value)
		}
	}
	return nil
}

// schemaErr names the schema file and the schema a row does not fit in err's reason (a
// statefmt.RowError; the file reader adds the file and the offset of the row).
func (r *Reader) schemaErr(err error, what string, t *statefmt.Type) error {
	var re *statefmt.RowError
	if !errors.As(err, &re) {
		return err
	}
	return &statefmt.RowError{At: re.At, Reason: fmt.Sprintf("the %s is not a row of the %s schema %s of %s: %s", what, what, t, r.store.SchemaFile, re.Reason)}
}

// Misfit is a store whose rows are not rows of its schema file.
type Misfit struct {
	// Key is true when a key does not fit (Spark compares key schemas first), false when
	// the keys fit and a value does not.
	Key bool
	// SchemaFile is the schema file, Family its schema.
	SchemaFile string
	Family     *statefmt.ColumnFamily
	// Partition is the partition of the first row that does not fit; Err says what did not.
	Partition int
	Err       error
	// Value is the first value that does not fit (nil for a key misfit); Keys are the keys
	// of the rows checked in that partition.
	Value []byte
	Keys  [][]byte
}

// errSampled stops CheckSchemaFit's read of a partition.
var errSampled = errors.New("sampled")

// CheckSchemaFit reads the first rows of every partition of state version v of a store that
// has a key and value schema file (not transformWithState's) as raw bytes and checks them
// against that schema (statefmt.FitRow): the first partition with a row that does not fit is
// the Misfit; nil, nil when every row read fits. The rows come from one file, the newest of the
// version's chain (its last delta or changelog, else its snapshot or zip), streamed and left
// after fitRows rows: a partition's other files are not read. A read that fails (a missing or
// damaged file) returns its error.
func CheckSchemaFit(ctx context.Context, cp *checkpoint.Checkpoint, l *Listing, op int64, store string, v int64) (*Misfit, error) {
	o := l.Operator(op)
	if o == nil || len(o.SchemaV3Files) > 0 || o.Store(store) == nil || o.Store(store).SchemaFile == "" {
		return nil, nil
	}
	for _, p := range o.Store(store).Partitions {
		r, err := NewReader(ctx, cp, l, ReadOptions{Operator: op, Store: store, Partition: p.ID, Version: v})
		if err != nil {
			return nil, err
		}
		fam := r.schema.Family(statefmt.DefaultColumnFamily)
		if fam == nil {
			return nil, nil
		}
		chain, err := ChainFor(p, r.store.Provider, v, IDsFor(ctx, cp, op, r.storeIndex(), p.ID))
		if err != nil {
			return nil, err
		}
		m := &Misfit{SchemaFile: o.Store(store).SchemaFile, Family: fam, Partition: p.ID}
		misfit := false
		n := 0
		each := func(key, value []byte) error {
			n++
			m.Keys = append(m.Keys, slices.Clone(key))
			if err := statefmt.FitRow(key, fam.Key); err != nil {
				m.Key, m.Value, misfit = true, nil, true
				m.Err = fmt.Errorf("row %d of partition %d: the key is not a row of the key schema %s: %w", n, p.ID, fam.KeyString, err)
				return errSampled
			}
			if value != nil && !misfit {
				if err := statefmt.FitRow(value, fam.Value); err != nil {
					misfit, m.Value = true, slices.Clone(value)
					m.Err = fmt.Errorf("row %d of partition %d: the value is not a row of the value schema %s: %w", n, p.ID, fam.ValueString, err)
				}
			}
			if n >= fitRows {
				return errSampled
			}
			return nil
		}
		var f *File
		if len(chain.Steps) > 0 {
			f = &chain.Steps[len(chain.Steps)-1]
		} else {
			f = chain.Base
		}
		switch {
		case f == nil:
		case f.Kind == KindZip:
			err = r.sstRows(ctx, p, *f, each)
		default:
			err = r.records(ctx, *f, func(rec statefmt.Record) error {
				if rec.Delete {
					return nil
				}
				return each(rec.Key, rec.Value)
			})
		}
		if err != nil && !errors.Is(err, errSampled) {
			return nil, err
		}
		if misfit {
			m.Err = fmt.Errorf("%s: %w", f.Path, m.Err)
			return m, nil
		}
	}
	return nil, nil
}

// dedupValue is a dropDuplicates store's value: one null field.
var dedupValue = statefmt.Struct(statefmt.Field{Name: "__dummy__", Type: &statefmt.Type{Name: "null"}, Nullable: true})

// checkSchemas records in inv, per store, what CheckSchemaFit finds in state version v
// (recovery.StateStore.Schema), for the planner to decide what Spark's schema check does. A
// store whose rows do not read (a missing or damaged file: the planner's loads say so) or fit
// gets none.
func checkSchemas(ctx context.Context, cp *checkpoint.Checkpoint, l *Listing, inv *recovery.StateInventory, v int64) {
	for oi := range inv.Operators {
		op := &inv.Operators[oi]
		for si := range op.Stores {
			s := &op.Stores[si]
			m, err := CheckSchemaFit(ctx, cp, l, op.ID, s.Name, v)
			if err != nil || m == nil {
				continue
			}
			s.Schema = &recovery.StateSchemaFit{
				File: m.SchemaFile, Partition: m.Partition, Detail: m.Err.Error(),
				KeyMisfit: m.Key, ValueMisfit: !m.Key,
				DedupValue: !m.Key && statefmt.FitRow(m.Value, dedupValue) == nil,
				NarrowKeys: slices.ContainsFunc(m.Keys, func(k []byte) bool { return statefmt.NarrowInWide(k, m.Family.Key) }),
				KeySchema:  m.Family.Key.ScalaString(), ValueSchema: m.Family.Value.ScalaString(),
			}
		}
	}
}
