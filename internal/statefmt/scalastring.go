package statefmt

import (
	"fmt"
	"strings"
)

// scalaNames are the case objects of Spark's simple data types, as their toString prints them.
var scalaNames = map[string]string{"string": "StringType", "integer": "IntegerType", "long": "LongType",
	"short": "ShortType", "byte": "ByteType", "double": "DoubleType", "float": "FloatType",
	"boolean": "BooleanType", "binary": "BinaryType", "date": "DateType", "timestamp": "TimestampType",
	"timestamp_ntz": "TimestampNTZType", "null": "NullType", "calendarinterval": "CalendarIntervalType",
	"variant": "VariantType"}

// ScalaString renders the type as Spark's DataType.toString does, the form its error messages
// print schemas in: StructType(StructField(k,StringType,true),StructField(n,LongType,false)).
func (t *Type) ScalaString() string {
	var b strings.Builder
	t.appendScala(&b)
	return b.String()
}

func (t *Type) appendScala(b *strings.Builder) {
	switch t.Name {
	case "struct":
		b.WriteString("StructType(")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("StructField(" + f.Name + ",")
			f.Type.appendScala(b)
			fmt.Fprintf(b, ",%t)", f.Nullable)
		}
		b.WriteByte(')')
	case "array":
		b.WriteString("ArrayType(")
		t.Elem.appendScala(b)
		fmt.Fprintf(b, ",%t)", t.ContainsNull)
	case "map":
		b.WriteString("MapType(")
		t.Key.appendScala(b)
		b.WriteByte(',')
		t.Value.appendScala(b)
		fmt.Fprintf(b, ",%t)", t.ContainsNull)
	case "decimal":
		fmt.Fprintf(b, "DecimalType(%d,%d)", t.Precision, t.Scale)
	default:
		if n, ok := scalaNames[t.Name]; ok {
			b.WriteString(n)
		} else {
			b.WriteString(t.Name)
		}
	}
}
