package transform

import (
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// Condition is a boolean expression over named columns other than Kafka's (`ckpt state edit
// --where` over a state row's key, value and partition_id), in the language of --filter with
// the same helper functions and CAST spellings. It is not safe for concurrent use.
type Condition struct {
	text string
	prog *vm.Program
	vm   vm.VM
}

// CompileCondition compiles text over the columns named in sample (their values show the
// types: a map[string]any column takes any field). A name that is not a column is an error
// that lists the columns.
func CompileCondition(text string, sample map[string]any) (*Condition, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("the condition is empty")
	}
	prog, err := expr.Compile(rewriteSQL(text), append([]expr.Option{expr.Env(sample), expr.AsBool()}, functions()...)...)
	if err != nil {
		names := make([]string, 0, len(sample))
		for n := range sample {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%q: %v (columns: %s)", text, cleanErr(err), strings.Join(names, ", "))
	}
	return &Condition{text: text, prog: prog}, nil
}

// Match evaluates the condition on one row's columns; a null result is false.
func (c *Condition) Match(env map[string]any) (bool, error) {
	out, err := c.vm.Run(c.prog, env)
	if err != nil {
		return false, fmt.Errorf("%q: %v", c.text, err)
	}
	b, _ := out.(bool)
	return b, nil
}

// String is the condition as written.
func (c *Condition) String() string { return c.text }
