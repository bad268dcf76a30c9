package transform

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// Aggregate functions of a streaming aggregation (Spark's count, sum, min, max, avg).
const (
	AggCount = "count"
	AggSum   = "sum"
	AggMin   = "min"
	AggMax   = "max"
	AggAvg   = "avg"
)

var (
	windowRE        = regexp.MustCompile(`(?i)^\s*window\s*\(`)
	sessionWindowRE = regexp.MustCompile(`(?i)^\s*session_window\s*\(`)
)

// Aggregate is one aggregate of a grouping: fn(expression) AS name.
type Aggregate struct {
	Func string
	// Star is count(*).
	Star bool
	// Name is the output column name: the alias, else Spark's ("count(1)", "sum(x)").
	Name string
	// Expr is the argument's text; Kind its type.
	Expr string
	Kind Kind
	prog *vm.Program
	kix  int // ≥ 0: the argument is this Kafka column
}

// ResultKind is the type of the aggregate's output column.
func (a *Aggregate) ResultKind() Kind {
	switch a.Func {
	case AggCount:
		return KindLong
	case AggAvg:
		return KindDouble
	case AggSum:
		if a.Kind == KindDouble {
			return KindDouble
		}
		return KindLong
	}
	return a.Kind
}

// Grouping is a compiled streaming aggregation: a filter, the grouping columns and the
// aggregates, all over the Kafka columns, as df.filter(…).groupBy(…).agg(…) in Spark. It is safe
// for concurrent use; each goroutine evaluates with its own GroupEvaluator.
type Grouping struct {
	filter *vm.Program
	// Keys are the grouping columns; KeyNullable says whether each may be null in Spark's
	// schema: always, as Spark's Kafka source declares every column nullable and ckpt does not
	// derive an expression's nullability.
	Keys        []Column
	KeyNullable []bool
	keyProgs    []*vm.Program
	keyIx       []int
	Aggs        []Aggregate
	// Window is the window() grouping column, nil for none: Eval gives the row's timestamp in
	// its place, and the caller expands it into the row's windows (Window.Windows).
	Window *TimeWindow
	// sameArg[i] is an earlier aggregate with aggregate i's argument text (evaluated once per
	// row: expressions are deterministic), -1 for none.
	sameArg []int
}

// KeyIsExpr reports whether grouping column i is an expression (not a plain Kafka column).
func (g *Grouping) KeyIsExpr(i int) bool { return g.keyProgs[i] != nil }

// Columns is the output schema: the grouping columns, then one column per aggregate.
func (g *Grouping) Columns() []Column {
	out := append([]Column(nil), g.Keys...)
	for i := range g.Aggs {
		out = append(out, Column{Name: g.Aggs[i].Name, Kind: g.Aggs[i].ResultKind(), Expr: g.Aggs[i].Func + "(" + g.Aggs[i].Expr + ")"})
	}
	return out
}

// CompileGrouping compiles a filter ("" keeps every row), the grouping items (each
// "expression AS name" or a Kafka column name; an item may hold several, separated by commas)
// and the aggregates (each "fn(expression) AS name", fn one of count, sum, min, max, avg;
// count(*) counts rows; items may be separated by commas).
func CompileGrouping(filter string, groupBy, aggs []string) (*Grouping, error) {
	g := &Grouping{}
	if strings.TrimSpace(filter) != "" {
		prog, err := expr.Compile(rewriteSQL(filter), append(options(), expr.AsBool())...)
		if err != nil {
			return nil, fmt.Errorf("filter %q: %v", filter, cleanErr(err))
		}
		g.filter = prog
	}
	seen := map[string]bool{}
	name := func(n string) error {
		if seen[n] {
			return fmt.Errorf("column %q appears twice in --group-by and --agg; give one of them another name with AS", n)
		}
		seen[n] = true
		return nil
	}
	items := SplitList(groupBy)
	if len(items) == 0 {
		return nil, fmt.Errorf("--agg needs --group-by: a global aggregation (no grouping column) is not supported yet")
	}
	for i, s := range items {
		text, alias := splitAlias(s)
		if text == "" {
			return nil, fmt.Errorf("group-by item %d is empty", i+1)
		}
		isWindow := windowRE.MatchString(text)
		if alias == "" && isWindow {
			alias = "window" // Spark's name for the window column
		}
		if alias == "" {
			if !identRE.MatchString(text) {
				return nil, fmt.Errorf("group-by %q: name the column with AS", s)
			}
			alias = text
		}
		if err := name(alias); err != nil {
			return nil, err
		}
		col := Column{Name: alias, Expr: text}
		if sessionWindowRE.MatchString(text) {
			return nil, fmt.Errorf("group-by %q: session_window() grouping is not supported yet", s)
		}
		if ix := kafkaIndex(text); ix >= 0 {
			col.Kind = KafkaColumns[ix].Kind
			if col.Kind == KindHeaders {
				return nil, fmt.Errorf("group-by %q: grouping by headers is not supported", s)
			}
			g.Keys = append(g.Keys, col)
			g.KeyNullable = append(g.KeyNullable, true) // Spark's Kafka schema: every column nullable
			g.keyProgs = append(g.keyProgs, nil)
			g.keyIx = append(g.keyIx, ix)
			continue
		}
		if isWindow {
			if g.Window != nil {
				// Spark: "Multiple time/session window expressions would result in a cartesian product".
				return nil, fmt.Errorf("group-by %q: only one window() per aggregation", s)
			}
			w, err := parseWindow(text)
			if err != nil {
				return nil, fmt.Errorf("group-by %q: %v", s, err)
			}
			w.Key = len(g.Keys)
			g.Window = w
			col.Kind = KindWindow
			g.Keys = append(g.Keys, col)
			// TimeWindowing's attribute: a tumbling window is a projected struct, not nullable;
			// a sliding window is Expand's output, nullable (Spark 4.1.1's schema check).
			g.KeyNullable = append(g.KeyNullable, w.Slide != w.Size)
			g.keyProgs = append(g.keyProgs, nil)
			g.keyIx = append(g.keyIx, kafkaIndex("timestamp"))
			continue
		}
		prog, err := expr.Compile(rewriteSQL(text), options()...)
		if err != nil {
			return nil, fmt.Errorf("group-by %q: %v", s, cleanErr(err))
		}
		col.Kind = kindOf(prog)
		if err := keyKind(col.Kind); err != nil {
			return nil, fmt.Errorf("group-by %q: %v", s, err)
		}
		g.Keys = append(g.Keys, col)
		g.KeyNullable = append(g.KeyNullable, true)
		g.keyProgs = append(g.keyProgs, prog)
		g.keyIx = append(g.keyIx, -1)
	}
	aitems := SplitList(aggs)
	if len(aitems) == 0 {
		return nil, fmt.Errorf("--group-by needs at least one aggregate: --agg 'count(*) AS n'")
	}
	for _, s := range aitems {
		a, err := compileAggregate(s)
		if err != nil {
			return nil, err
		}
		if err := name(a.Name); err != nil {
			return nil, err
		}
		same := -1
		for j := range g.Aggs {
			if !a.Star && !g.Aggs[j].Star && g.Aggs[j].Expr == a.Expr {
				same = j
				break
			}
		}
		g.Aggs = append(g.Aggs, a)
		g.sameArg = append(g.sameArg, same)
	}
	return g, nil
}

func keyKind(k Kind) error {
	switch k {
	case KindAny:
		return fmt.Errorf("its type is not known; cast it, e.g. string(…), int(…), float(…)")
	case KindHeaders:
		return fmt.Errorf("grouping by headers is not supported")
	}
	return nil
}

func compileAggregate(s string) (Aggregate, error) {
	text, alias := splitAlias(s)
	open := strings.IndexByte(text, '(')
	if open < 0 || !strings.HasSuffix(text, ")") {
		return Aggregate{}, fmt.Errorf("aggregate %q: want fn(expression) AS name with fn count, sum, min, max or avg", s)
	}
	a := Aggregate{Func: strings.ToLower(strings.TrimSpace(text[:open])), Name: alias, kix: -1}
	arg := strings.TrimSpace(text[open+1 : len(text)-1])
	switch a.Func {
	case AggCount, AggSum, AggMin, AggMax, AggAvg:
	case "mean":
		a.Func = AggAvg
	default:
		return Aggregate{}, fmt.Errorf("aggregate %q: unknown function %q (count, sum, min, max, avg)", s, text[:open])
	}
	if arg == "" {
		return Aggregate{}, fmt.Errorf("aggregate %q: no argument", s)
	}
	if arg == "*" || (a.Func == AggCount && (arg == "1")) {
		if a.Func != AggCount {
			return Aggregate{}, fmt.Errorf("aggregate %q: only count takes *", s)
		}
		a.Star = true
		a.Expr = "1"
		if a.Name == "" {
			a.Name = "count(1)"
		}
		return a, nil
	}
	a.Expr = arg
	if a.Name == "" {
		a.Name = a.Func + "(" + arg + ")"
	}
	if ix := kafkaIndex(arg); ix >= 0 {
		a.kix = ix
		a.Kind = KafkaColumns[ix].Kind
	} else {
		prog, err := expr.Compile(rewriteSQL(arg), options()...)
		if err != nil {
			return Aggregate{}, fmt.Errorf("aggregate %q: %v", s, cleanErr(err))
		}
		a.prog = prog
		a.Kind = kindOf(prog)
	}
	switch a.Func {
	case AggSum, AggAvg:
		if a.Kind != KindInt && a.Kind != KindLong && a.Kind != KindDouble {
			return Aggregate{}, fmt.Errorf("aggregate %q: %s of a %s: want a number; cast it with int(…) or float(…)", s, a.Func, a.Kind)
		}
	case AggMin, AggMax:
		if err := keyKind(a.Kind); err != nil {
			return Aggregate{}, fmt.Errorf("aggregate %q: %v", s, err)
		}
	}
	return a, nil
}

// SplitList splits items at the commas that are outside parentheses, brackets and quotes, so
// "count(*) AS n, sum(v) AS s" is two items. Empty items are dropped.
func SplitList(items []string) []string {
	var out []string
	for _, it := range items {
		depth, start := 0, 0
		var quote byte
		for i := 0; i < len(it); i++ {
			c := it[i]
			switch {
			case quote != 0:
				if c == '\\' {
					i++
				} else if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'' || c == '`':
				quote = c
			case c == '(' || c == '[' || c == '{':
				depth++
			case c == ')' || c == ']' || c == '}':
				depth--
			case c == ',' && depth == 0:
				if s := strings.TrimSpace(it[start:i]); s != "" {
					out = append(out, s)
				}
				start = i + 1
			}
		}
		if s := strings.TrimSpace(it[start:]); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// GroupEvaluator evaluates a Grouping on rows; it is not safe for concurrent use.
type GroupEvaluator struct {
	g  *Grouping
	vm vm.VM
}

// NewEvaluator returns an evaluator for one goroutine.
func (g *Grouping) NewEvaluator() *GroupEvaluator { return &GroupEvaluator{g: g} }

// Eval evaluates the filter, and for a kept row the grouping columns (appended to keys[:0]) and
// the aggregates' arguments (appended to args[:0]; nil for count(*)). Values are normalised:
// whole numbers of a long column are int64, timestamps time.Time.
func (e *GroupEvaluator) Eval(r *Row, keys, args []any) (bool, []any, []any, error) {
	if e.g.filter != nil {
		out, err := e.vm.Run(e.g.filter, r)
		if err != nil {
			return false, keys, args, fmt.Errorf("filter at %s-%d offset %d: %v", r.Topic, r.Partition, r.Offset, err)
		}
		if b, _ := out.(bool); !b {
			return false, keys, args, nil
		}
	}
	keys, args = keys[:0], args[:0]
	for i, prog := range e.g.keyProgs {
		var v any
		if prog == nil {
			v = kafkaValue(r, e.g.keyIx[i])
		} else {
			var err error
			if v, err = e.vm.Run(prog, r); err != nil {
				return false, keys, args, fmt.Errorf("group-by %s at %s-%d offset %d: %v", e.g.Keys[i].Name, r.Topic, r.Partition, r.Offset, err)
			}
		}
		kind := e.g.Keys[i].Kind
		if kind == KindWindow {
			kind = KindTimestamp
		}
		nv, err := normalize(v, kind)
		if err != nil {
			return false, keys, args, fmt.Errorf("group-by %s at %s-%d offset %d: %v", e.g.Keys[i].Name, r.Topic, r.Partition, r.Offset, err)
		}
		keys = append(keys, nv)
	}
	for i := range e.g.Aggs {
		a := &e.g.Aggs[i]
		if j := e.g.sameArg[i]; j >= 0 {
			args = append(args, args[j]) // the same expression as an earlier aggregate's
			continue
		}
		var v any
		switch {
		case a.Star:
		case a.prog == nil:
			v = kafkaValue(r, a.kix)
		default:
			var err error
			if v, err = e.vm.Run(a.prog, r); err != nil {
				return false, keys, args, fmt.Errorf("aggregate %s at %s-%d offset %d: %v", a.Name, r.Topic, r.Partition, r.Offset, err)
			}
		}
		nv, err := normalize(v, a.Kind)
		if err != nil {
			return false, keys, args, fmt.Errorf("aggregate %s at %s-%d offset %d: %v", a.Name, r.Topic, r.Partition, r.Offset, err)
		}
		args = append(args, nv)
	}
	return true, keys, args, nil
}

// normalize gives a value of kind k one Go type: int32, int64, float64, string, []byte, bool,
// time.Time, or nil.
func normalize(v any, k Kind) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch k {
	case KindAny, KindHeaders:
		return v, nil // count's argument: only its nullness counts
	case KindInt:
		switch x := v.(type) {
		case int32:
			return x, nil
		case int:
			if x < math.MinInt32 || x > math.MaxInt32 {
				return nil, fmt.Errorf("%d does not fit an int", x)
			}
			return int32(x), nil
		}
	case KindLong:
		switch x := v.(type) {
		case int:
			return int64(x), nil
		case int64:
			return x, nil
		case int32:
			return int64(x), nil
		}
	case KindDouble:
		switch x := v.(type) {
		case float64:
			return x, nil
		case int:
			return float64(x), nil
		}
	case KindString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case KindBinary:
		if b, ok := v.([]byte); ok {
			if b == nil {
				return nil, nil
			}
			return b, nil
		}
	case KindBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case KindTimestamp:
		if t, ok := v.(time.Time); ok {
			return t, nil
		}
	}
	return nil, fmt.Errorf("a %T value where the column is %s", v, k)
}
