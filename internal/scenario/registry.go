package scenario

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Scenario is one named checkpoint.
type Scenario struct {
	// Name is unique, lower-case with dashes; it names the directory under
	// testdata/scenarios and the golden files.
	Name string
	// Doc says what the checkpoint models and why it matters.
	Doc string
	// Build adds the files.
	Build func(b *Builder)
	// SinkLatest, when set, is the latest batch of a file sink's
	// _spark_metadata log that goes with this checkpoint (the planner's
	// Options.SinkLatest).
	SinkLatest *int64
	// Variants lists extra planner configurations the recovery goldens cover
	// beyond sync, async and spark-2.1 (Spark 3.5 / 2.1): "sync@4.0",
	// "sync@4.1", "sync@4.0/cf2" (commit format version 2), "async@4.1".
	Variants []string
	// Tags group scenarios ("recovery", "doctor", "async", "corrupt"…).
	Tags []string
}

var (
	mu       sync.Mutex
	registry = map[string]Scenario{}
)

// Register adds scenarios; it panics on a duplicate or unnamed scenario,
// which is a programming error found by any test run.
func Register(ss ...Scenario) {
	mu.Lock()
	defer mu.Unlock()
	for _, s := range ss {
		if s.Name == "" || s.Build == nil {
			panic("scenario: Register needs a Name and a Build function")
		}
		if _, dup := registry[s.Name]; dup {
			panic("scenario: duplicate scenario " + s.Name)
		}
		registry[s.Name] = s
	}
}

// All returns every registered scenario, sorted by name.
func All() []Scenario {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Scenario, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Tagged returns the scenarios carrying tag, sorted by name.
func Tagged(tag string) []Scenario {
	var out []Scenario
	for _, s := range All() {
		for _, t := range s.Tags {
			if t == tag {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// Get returns the scenario called name.
func Get(name string) (Scenario, bool) {
	mu.Lock()
	defer mu.Unlock()
	s, ok := registry[name]
	return s, ok
}

// Builder runs the scenario's Build on a fresh builder.
func (s Scenario) Builder() *Builder {
	b := NewBuilder(s.Name)
	s.Build(b)
	return b
}

// Files returns the scenario's files: store-relative path → bytes.
func (s Scenario) Files() map[string][]byte { return s.Builder().Files() }

// WriteTo writes the scenario's checkpoint into st.
func (s Scenario) WriteTo(ctx context.Context, st storage.Store) error {
	return s.Builder().WriteTo(ctx, st)
}

// Mem builds the scenario into the process-global Mem store
// "scenario-<name>" (URI mem://scenario-<name>) and returns it with a
// function that forgets it.
func (s Scenario) Mem(ctx context.Context) (storage.Store, func(), error) {
	name := "scenario-" + s.Name
	storage.ForgetMem(name)
	m := storage.MemNamed(name)
	if err := s.WriteTo(ctx, m); err != nil {
		storage.ForgetMem(name)
		return nil, nil, fmt.Errorf("build %s: %w", s.Name, err)
	}
	return m, func() { storage.ForgetMem(name) }, nil
}

func i64(v int64) *int64 { return &v }
