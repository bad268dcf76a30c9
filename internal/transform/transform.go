// Package transform is the optional stateless step of `ckpt run`: a filter and a projection over
// rows with Spark's Kafka source schema, written as expressions (github.com/expr-lang/expr).
//
// The row fields are the columns of Spark's Kafka source: key and value (binary), topic, partition,
// offset, timestamp, timestampType and headers. Helper functions make the usual Spark casts easy to
// write:
//
//	string(value)                  CAST(value AS STRING); nil stays nil
//	json(value, "user.id")         get_json_object(CAST(value AS STRING), '$.user.id'), typed
//	get_json_object(value, "$.a")  the same with Spark's JSONPath spelling, always a string
//	header(headers, "trace")       the first header named trace, as a string
//	bytes(s)                       CAST(s AS BINARY)
//	timestamp_ms(timestamp)        milliseconds since the epoch
//
// `CAST(x AS STRING)` and `CAST(x AS BINARY)` are accepted as written in Spark SQL and rewritten
// to string(x) and bytes(x).
//
// A projection item is `expression AS name` or a bare column name; items without an alias are
// named after the expression when it is an identifier, otherwise col1, col2, ….
package transform

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// Header is one Kafka record header.
type Header struct {
	Key   string `expr:"key" json:"key"`
	Value []byte `expr:"value" json:"value"`
}

// Row is one input record with Spark's Kafka source schema. Field tags give the column names used
// in expressions.
type Row struct {
	Key           []byte    `expr:"key"`
	Value         []byte    `expr:"value"`
	Topic         string    `expr:"topic"`
	Partition     int32     `expr:"partition"`
	Offset        int64     `expr:"offset"`
	Timestamp     time.Time `expr:"timestamp"`
	TimestampType int32     `expr:"timestampType"`
	Headers       []Header  `expr:"headers"`
}

// Kind is the type of an output column, as far as a sink needs to know it (Parquet schema,
// console rendering).
type Kind int

// The column kinds.
const (
	KindAny Kind = iota // decided per value; written as JSON text to Parquet
	KindBinary
	KindString
	KindInt  // 32-bit
	KindLong // 64-bit
	KindDouble
	KindBool
	KindTimestamp
	KindHeaders
)

func (k Kind) String() string {
	return [...]string{"any", "binary", "string", "int", "bigint", "double", "boolean", "timestamp", "array<struct<key:string,value:binary>>", "struct<start:timestamp,end:timestamp>"}[k]
}

// Column is one output column.
type Column struct {
	Name string
	Kind Kind
	// Expr is the expression text ("" for a plain Kafka column).
	Expr string
}

// KafkaColumns is the schema of Spark's Kafka source, the output when there is no projection.
var KafkaColumns = []Column{
	{Name: "key", Kind: KindBinary},
	{Name: "value", Kind: KindBinary},
	{Name: "topic", Kind: KindString},
	{Name: "partition", Kind: KindInt},
	{Name: "offset", Kind: KindLong},
	{Name: "timestamp", Kind: KindTimestamp},
	{Name: "timestampType", Kind: KindInt},
	{Name: "headers", Kind: KindHeaders},
}

// KafkaValues returns the row's values in KafkaColumns order. Nil key or value stays nil.
func KafkaValues(r *Row, out []any) []any {
	out = append(out[:0], nilBytes(r.Key), nilBytes(r.Value), r.Topic, r.Partition, r.Offset, r.Timestamp, r.TimestampType, r.Headers)
	return out
}

// kafkaValue is KafkaValues(r)[ix] without building the others.
func kafkaValue(r *Row, ix int) any {
	switch ix {
	case 0:
		return nilBytes(r.Key)
	case 1:
		return nilBytes(r.Value)
	case 2:
		return r.Topic
	case 3:
		return r.Partition
	case 4:
		return r.Offset
	case 5:
		return r.Timestamp
	case 6:
		return r.TimestampType
	}
	return r.Headers
}

func nilBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// Program is a compiled filter and projection. It is safe for concurrent use; each goroutine
// evaluates with its own Evaluator.
type Program struct {
	filter  *vm.Program
	columns []Column
	progs   []*vm.Program // nil entry: plain Kafka column at kafkaIdx
	kafkaIx []int
	project bool
}

// Compile checks and compiles a filter ("" = keep every row) and a projection (nil = Spark's Kafka
// columns). Errors name the expression and say what is wrong.
func Compile(filter string, selects []string) (*Program, error) {
	p := &Program{}
	if strings.TrimSpace(filter) != "" {
		prog, err := expr.Compile(rewriteSQL(filter), append(options(), expr.AsBool())...)
		if err != nil {
			return nil, fmt.Errorf("filter %q: %v", filter, cleanErr(err))
		}
		p.filter = prog
	}
	if len(selects) == 0 {
		p.columns = KafkaColumns
		return p, nil
	}
	p.project = true
	seen := map[string]bool{}
	for i, s := range selects {
		text, name := splitAlias(s)
		if text == "" {
			return nil, fmt.Errorf("select item %d is empty", i+1)
		}
		if name == "" {
			if identRE.MatchString(text) {
				name = text
			} else {
				name = "col" + strconv.Itoa(i+1)
			}
		}
		if seen[name] {
			return nil, fmt.Errorf("select: column %q appears twice; give one of them another name with AS", name)
		}
		seen[name] = true
		col := Column{Name: name, Expr: text}
		if ix := kafkaIndex(text); ix >= 0 {
			col.Kind = KafkaColumns[ix].Kind
			p.columns = append(p.columns, col)
			p.progs = append(p.progs, nil)
			p.kafkaIx = append(p.kafkaIx, ix)
			continue
		}
		prog, err := expr.Compile(rewriteSQL(text), options()...)
		if err != nil {
			return nil, fmt.Errorf("select %q: %v", s, cleanErr(err))
		}
		col.Kind = kindOf(prog)
		p.columns = append(p.columns, col)
		p.progs = append(p.progs, prog)
		p.kafkaIx = append(p.kafkaIx, -1)
	}
	return p, nil
}

// KafkaSelection returns, when the projection only picks Kafka columns (`value`, `key AS k`),
// their indexes in KafkaColumns, so callers can keep rows unboxed.
func (p *Program) KafkaSelection() ([]int, bool) {
	if !p.project {
		return nil, false
	}
	for _, prog := range p.progs {
		if prog != nil {
			return nil, false
		}
	}
	return p.kafkaIx, true
}

// HasFilter reports whether there is a filter.
func (p *Program) HasFilter() bool { return p.filter != nil }

// KafkaValue is KafkaValues(r)[ix].
func KafkaValue(r *Row, ix int) any { return kafkaValue(r, ix) }

// Columns is the output schema.
func (p *Program) Columns() []Column { return p.columns }

// Identity reports that the program keeps every row and every Kafka column unchanged, so callers
// may skip evaluation entirely.
func (p *Program) Identity() bool { return p.filter == nil && !p.project }

// Projects reports whether there is a projection (false: output rows are the Kafka columns).
func (p *Program) Projects() bool { return p.project }

// Evaluator runs a Program on rows; it is not safe for concurrent use.
type Evaluator struct {
	p  *Program
	vm vm.VM
}

// NewEvaluator returns an evaluator for one goroutine.
func (p *Program) NewEvaluator() *Evaluator { return &Evaluator{p: p} }

// Keep evaluates the filter.
func (e *Evaluator) Keep(r *Row) (bool, error) {
	if e.p.filter == nil {
		return true, nil
	}
	out, err := e.vm.Run(e.p.filter, r)
	if err != nil {
		return false, fmt.Errorf("filter at %s-%d offset %d: %v", r.Topic, r.Partition, r.Offset, err)
	}
	b, _ := out.(bool)
	return b, nil
}

// Project appends the row's output values (in Columns order) to out[:0].
func (e *Evaluator) Project(r *Row, out []any) ([]any, error) {
	if !e.p.project {
		return KafkaValues(r, out), nil
	}
	out = out[:0]
	for i, prog := range e.p.progs {
		if prog == nil {
			out = append(out, kafkaValue(r, e.p.kafkaIx[i]))
			continue
		}
		v, err := e.vm.Run(prog, r)
		if err != nil {
			return nil, fmt.Errorf("select %s at %s-%d offset %d: %v", e.p.columns[i].Name, r.Topic, r.Partition, r.Offset, err)
		}
		out = append(out, v)
	}
	return out, nil
}

var (
	identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	aliasRE = regexp.MustCompile(`(?is)^(.*\S)\s+as\s+([A-Za-z_][A-Za-z0-9_]*)\s*$`)
	castRE  = regexp.MustCompile(`(?i)\bCAST\s*\(\s*([^()]+?)\s+AS\s+(STRING|BINARY)\s*\)`)
)

func splitAlias(s string) (text, name string) {
	s = strings.TrimSpace(s)
	// "CAST(value AS STRING)" must not lose its inner AS: only an alias after the last ')'.
	if m := aliasRE.FindStringSubmatch(s); m != nil && !strings.Contains(s[len(m[1]):], ")") {
		return strings.TrimSpace(m[1]), m[2]
	}
	return s, ""
}

func rewriteSQL(s string) string {
	return castRE.ReplaceAllStringFunc(s, func(m string) string {
		sm := castRE.FindStringSubmatch(m)
		fn := "string"
		if strings.EqualFold(sm[2], "BINARY") {
			fn = "bytes"
		}
		return fn + "(" + strings.TrimSpace(sm[1]) + ")"
	})
}

func kafkaIndex(name string) int {
	for i, c := range KafkaColumns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func kindOf(p *vm.Program) Kind {
	t := p.Node().Type()
	if t == nil {
		return KindAny
	}
	switch t.String() {
	case "[]uint8":
		return KindBinary
	case "string":
		return KindString
	case "int32":
		return KindInt
	case "int", "int64":
		return KindLong
	case "float64":
		return KindDouble
	case "bool":
		return KindBool
	case "time.Time":
		return KindTimestamp
	case "[]transform.Header":
		return KindHeaders
	}
	return KindAny
}

func cleanErr(err error) string {
	return strings.TrimSpace(err.Error())
}

func options() []expr.Option {
	return append([]expr.Option{expr.Env(Row{})}, functions()...)
}

// functions are the helper functions of every expression, whatever its columns.
func functions() []expr.Option {
	return []expr.Option{
		expr.Function("string", fnString, new(func(any) string)),
		expr.Function("bytes", fnBytes, new(func(any) []byte)),
		expr.Function("json", fnJSON, new(func(any, string) any), new(func(any) any)),
		expr.Function("get_json_object", fnGetJSONObject, new(func(any, string) any)),
		expr.Function("header", fnHeader, new(func([]Header, string) any)),
		expr.Function("timestamp_ms", fnTimestampMs, new(func(time.Time) int64)),
	}
}

// toString is CAST(x AS STRING); the boolean is false for null.
func toString(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case []byte:
		if x == nil {
			return "", false
		}
		return string(x), true
	case string:
		return x, true
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05.000"), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b), true
	}
	return fmt.Sprint(v), true
}

func fnString(params ...any) (any, error) {
	s, ok := toString(params[0])
	if !ok {
		return nil, nil
	}
	return s, nil
}

func fnBytes(params ...any) (any, error) {
	switch x := params[0].(type) {
	case nil:
		return nil, nil
	case []byte:
		return x, nil
	}
	s, _ := toString(params[0])
	return []byte(s), nil
}

func parseJSON(v any) (any, bool) {
	var data []byte
	switch x := v.(type) {
	case []byte:
		data = x
	case string:
		data = []byte(x)
	case map[string]any, []any:
		return x, true
	default:
		return nil, false
	}
	if data == nil {
		return nil, false
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, false // like Spark: malformed JSON gives null
	}
	return out, true
}

func walk(doc any, path string) any {
	if path == "" {
		return doc
	}
	for _, part := range strings.Split(path, ".") {
		name, idx, hasIdx := part, 0, false
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			n, err := strconv.Atoi(part[i+1 : len(part)-1])
			if err != nil {
				return nil
			}
			name, idx, hasIdx = part[:i], n, true
		}
		if name != "" {
			m, ok := doc.(map[string]any)
			if !ok {
				return nil
			}
			doc = m[name]
		}
		if hasIdx {
			a, ok := doc.([]any)
			if !ok || idx < 0 || idx >= len(a) {
				return nil
			}
			doc = a[idx]
		}
	}
	return doc
}

// fnJSON extracts a field (dotted path, [i] for arrays) from JSON text; numbers come back as
// float64 (or int when integral), objects as maps. Malformed JSON or a missing field gives nil.
func fnJSON(params ...any) (any, error) {
	doc, ok := parseJSON(params[0])
	if !ok {
		return nil, nil
	}
	path := ""
	if len(params) > 1 {
		path, _ = params[1].(string)
	}
	v := walk(doc, strings.TrimPrefix(strings.TrimPrefix(path, "$"), "."))
	if f, ok := v.(float64); ok && f == float64(int64(f)) && f < 1<<53 && f > -(1<<53) {
		return int(f), nil
	}
	return v, nil
}

// fnGetJSONObject is Spark's get_json_object: the result is a string (JSON text for objects).
func fnGetJSONObject(params ...any) (any, error) {
	doc, ok := parseJSON(params[0])
	if !ok {
		return nil, nil
	}
	path, _ := params[1].(string)
	if !strings.HasPrefix(path, "$") {
		return nil, nil
	}
	v := walk(doc, strings.TrimPrefix(strings.TrimPrefix(path, "$"), "."))
	if v == nil {
		return nil, nil
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, _ := json.Marshal(v)
	return string(b), nil
}

func fnHeader(params ...any) (any, error) {
	hs, _ := params[0].([]Header)
	name, _ := params[1].(string)
	for _, h := range hs {
		if h.Key == name {
			if h.Value == nil {
				return nil, nil
			}
			return string(h.Value), nil
		}
	}
	return nil, nil
}

func fnTimestampMs(params ...any) (any, error) {
	t, _ := params[0].(time.Time)
	return t.UnixMilli(), nil
}
