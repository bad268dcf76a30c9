package cli

import "github.com/spf13/pflag"

// DeltaFlags are --delta-table and --delta-sink, shared by doctor, replay, repair and lag; the
// tables they name are read by internal/deltastate.
type DeltaFlags struct {
	// Tables are --delta-table values: "PATH" or "I=PATH" (source I). Default: none.
	Tables []string
	// Sink is --delta-sink: the Delta table the query writes to. Default: none.
	Sink string
}

// AddTableFlag adds --delta-table.
func (f *DeltaFlags) AddTableFlag(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.Tables, "delta-table", f.Tables, "a Delta source's table `[I=]PATH` (any store; I: the source index, default the Delta sources in order; repeatable)")
}

// AddSinkFlag adds --delta-sink.
func (f *DeltaFlags) AddSinkFlag(fs *pflag.FlagSet) {
	fs.StringVar(&f.Sink, "delta-sink", f.Sink, "the Delta table `PATH` the query writes to (its txn action for the query id says which batches it has)")
}
