// Package statetest holds what the tests that compare ckpt's state rows with Spark's
// statestore reader share (tests only).
package statetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Normalize re-renders one JSON row with Spark's JSON writer conventions factored out: null
// fields dropped (Spark omits them), numbers compared as numbers (3.0 and 3, 1.50 and 1.5).
// Field order is kept: Spark's aggregation buffers repeat names ("sum", "count").
func Normalize(line []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var b strings.Builder
	if err := value(dec, &b); err != nil {
		return "", err
	}
	return b.String(), nil
}

func value(dec *json.Decoder, b *strings.Builder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch x := tok.(type) {
	case json.Delim:
		closing := byte(']')
		if x == '{' {
			closing = '}'
		}
		b.WriteByte(byte(x))
		first := true
		for dec.More() {
			var key string
			if x == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key = strconv.Quote(k.(string)) + ":"
			}
			var v strings.Builder
			if err := value(dec, &v); err != nil {
				return err
			}
			if x == '{' && v.String() == "null" {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(key + v.String())
		}
		_, err = dec.Token()
		b.WriteByte(closing)
		return err
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return err
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case string:
		b.WriteString(strconv.Quote(x))
	case nil:
		b.WriteString("null")
	default:
		b.WriteString(fmt.Sprint(x))
	}
	return nil
}
