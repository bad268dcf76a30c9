package state

import (
	"context"
	"errors"
	"io/fs"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// StoreSummary is one row of `ckpt state ls`: one store of one operator.
type StoreSummary struct {
	Operator int64 `json:"operator"`
	// OperatorName is from the operator metadata ("stateStoreSave", "dedupe",
	// "symmetricHashJoin"); "" without one.
	OperatorName string `json:"operatorName"`
	Store        string `json:"store"`
	Provider     string `json:"provider"`
	Partitions   int    `json:"partitions"`
	// MinVersion and MaxVersion span the version files on disk (0, 0: none).
	MinVersion int64 `json:"minVersion"`
	MaxVersion int64 `json:"maxVersion"`
	// CheckpointFormat is 2 when files carry unique ids (<version>_<uuid>.<ext>), else 1.
	CheckpointFormat int `json:"checkpointFormat"`
	// Files counts version files (delta, snapshot, zip, changelog); SSTs the RocksDB SST files.
	Files int   `json:"files"`
	SSTs  int   `json:"ssts"`
	Bytes int64 `json:"bytes"`
	// KeySchema and ValueSchema are the stored schema ("" without a schema file).
	KeySchema   string `json:"keySchema"`
	ValueSchema string `json:"valueSchema"`
	// SchemaError says why the schema file could not be read, when it could not.
	SchemaError string `json:"schemaError,omitempty"`
	// StateVariables are a transformWithState store's state variables (with its timers), read
	// from the operator metadata and the v3 schema; nil for other operators.
	StateVariables []StateVariable `json:"stateVariables,omitempty"`
}

// Summarize lists every store of l, reading the small schema and operator metadata files.
func Summarize(ctx context.Context, st storage.Store, l *Listing) ([]StoreSummary, error) {
	out := []StoreSummary{}
	for _, o := range l.Operators {
		name := ""
		if o.MetadataFile != "" {
			data, err := st.ReadFile(ctx, o.MetadataFile)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			if m, err := logformat.ParseOperatorMetadata(o.MetadataFile, data); err == nil {
				name = m.OperatorName
			}
		}
		for _, s := range o.Stores {
			sum := StoreSummary{Operator: o.ID, OperatorName: name, Store: s.Name, Provider: s.Provider, Partitions: len(s.Partitions), CheckpointFormat: 1}
			sum.MinVersion, sum.MaxVersion, _ = s.Versions()
			for _, p := range s.Partitions {
				sum.Files += len(p.Files)
				sum.SSTs += len(p.SSTs)
				sum.Bytes += p.Bytes
				for _, f := range p.Files {
					if f.UniqueID != "" {
						sum.CheckpointFormat = 2
					}
				}
			}
			if s.SchemaFile != "" {
				data, err := st.ReadFile(ctx, s.SchemaFile)
				if err != nil {
					return nil, err
				}
				if sc, err := statefmt.ParseSchema(s.SchemaFile, data); err != nil {
					sum.SchemaError = err.Error()
				} else if f := sc.Family(statefmt.DefaultColumnFamily); f != nil {
					sum.KeySchema, sum.ValueSchema = f.KeyString, f.ValueString
				}
			}
			if isTWS(o) {
				if opName, vars, err := twsVariables(ctx, st, o, s.Name); err != nil {
					sum.SchemaError = err.Error()
				} else {
					sum.StateVariables = vars
					if sum.OperatorName == "" {
						sum.OperatorName = opName
					}
				}
			}
			out = append(out, sum)
		}
	}
	return out, nil
}
