package statefmt

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
)

// Type is a Spark SQL data type as it appears in a state schema (its JSON form).
type Type struct {
	// Name is the type name: "string", "integer", "long", "double", "float", "short", "byte",
	// "boolean", "binary", "date", "timestamp", "timestamp_ntz", "null", "decimal",
	// "calendarinterval", "struct", "array", "map".
	Name string
	// Precision and Scale are set for decimal.
	Precision, Scale int
	// Fields are set for struct.
	Fields []Field
	// Elem is the element type of an array, Key and Value those of a map.
	Elem, Key, Value *Type
	// ContainsNull is an array's containsNull, a map's valueContainsNull.
	ContainsNull bool

	fields atomic.Pointer[[]fieldPlan] // AppendRowJSON's plan of a struct, built on first use
}

// Field is one field of a struct.
type Field struct {
	Name     string `json:"name"`
	Type     *Type  `json:"type"`
	Nullable bool   `json:"nullable"`
	// Metadata is the field's metadata as the schema file holds it (Spark marks the event-time
	// column with spark.watermarkDelayMs there); nil when it has none.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Struct is a struct type of fields.
func Struct(fields ...Field) *Type { return &Type{Name: "struct", Fields: fields} }

// String renders the type the way Spark's simpleString does ("struct<k:string,n:bigint>").
func (t *Type) String() string {
	switch t.Name {
	case "struct":
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = f.Name + ":" + f.Type.String()
		}
		return "struct<" + strings.Join(parts, ",") + ">"
	case "array":
		return "array<" + t.Elem.String() + ">"
	case "map":
		return "map<" + t.Key.String() + "," + t.Value.String() + ">"
	case "decimal":
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case "integer":
		return "int"
	case "long":
		return "bigint"
	case "short":
		return "smallint"
	case "byte":
		return "tinyint"
	case "null":
		return "void"
	}
	return t.Name
}

// UnmarshalJSON reads Spark's DataType JSON: a bare name or an object for complex types.
func (t *Type) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		return t.setName(name)
	}
	var obj struct {
		Type          string          `json:"type"`
		Fields        []Field         `json:"fields"`
		ElementType   *Type           `json:"elementType"`
		KeyType       *Type           `json:"keyType"`
		ValueType     *Type           `json:"valueType"`
		SQLType       *Type           `json:"sqlType"`
		ContainsNull  json.RawMessage `json:"containsNull"`
		ValueContains json.RawMessage `json:"valueContainsNull"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("a data type: %w", err)
	}
	switch obj.Type {
	case "struct":
		*t = Type{Name: "struct", Fields: obj.Fields}
		for _, f := range obj.Fields {
			if f.Type == nil {
				return fmt.Errorf("struct field %q has no type", f.Name)
			}
		}
		if t.Fields == nil {
			t.Fields = []Field{}
		}
	case "array":
		if obj.ElementType == nil {
			return fmt.Errorf("array without elementType")
		}
		*t = Type{Name: "array", Elem: obj.ElementType, ContainsNull: string(obj.ContainsNull) == "true"}
	case "map":
		if obj.KeyType == nil || obj.ValueType == nil {
			return fmt.Errorf("map without keyType or valueType")
		}
		*t = Type{Name: "map", Key: obj.KeyType, Value: obj.ValueType, ContainsNull: string(obj.ValueContains) == "true"}
	case "udt":
		if obj.SQLType == nil {
			return fmt.Errorf("udt without sqlType")
		}
		st := obj.SQLType // the fields, not the plan cache
		*t = Type{Name: st.Name, Precision: st.Precision, Scale: st.Scale, Fields: st.Fields, Elem: st.Elem, Key: st.Key, Value: st.Value}
	default:
		return fmt.Errorf("unknown data type %q", obj.Type)
	}
	return nil
}

func (t *Type) setName(name string) error {
	switch name {
	case "string", "integer", "long", "double", "float", "short", "byte", "boolean", "binary", "void",
		"date", "timestamp", "timestamp_ntz", "null", "calendarinterval", "variant":
		if name == "void" {
			name = "null"
		}
		*t = Type{Name: name}
		return nil
	case "decimal":
		*t = Type{Name: "decimal", Precision: 10, Scale: 0}
		return nil
	}
	if strings.HasPrefix(name, "decimal(") && strings.HasSuffix(name, ")") {
		p, s, ok := strings.Cut(name[len("decimal("):len(name)-1], ",")
		pi, err1 := strconv.Atoi(strings.TrimSpace(p))
		si, err2 := strconv.Atoi(strings.TrimSpace(s))
		if ok && err1 == nil && err2 == nil && pi > 0 && pi <= 38 && si >= 0 && si <= pi {
			*t = Type{Name: "decimal", Precision: pi, Scale: si}
			return nil
		}
	}
	if strings.HasPrefix(name, "char(") || strings.HasPrefix(name, "varchar(") {
		*t = Type{Name: "string"}
		return nil
	}
	return fmt.Errorf("unknown data type %q", name)
}

// fixedSize is the width of a value of t inside an UnsafeArrayData (0: variable length, an
// offset-and-size word).
func (t *Type) fixedSize() int {
	switch t.Name {
	case "boolean", "byte":
		return 1
	case "short":
		return 2
	case "integer", "date", "float":
		return 4
	case "long", "double", "timestamp", "timestamp_ntz":
		return 8
	case "decimal":
		if t.Precision <= 18 {
			return 8
		}
	case "null":
		return 1
	}
	return 0
}
