package render

import (
	"reflect"
	"strings"
	"unicode/utf8"
)

// Escape makes s safe to print on a terminal: control characters (C0, DEL and C1, line breaks
// included) become Go-style escapes ("\x1b", "\r", "\u009b") and invalid UTF-8 bytes "\xff",
// so that a file name or a file's content can neither move the cursor, clear the screen, set the
// window title nor forge a line. Strings from a checkpoint, a file or a flag go through it (or
// EscapeText) before they are printed; JSON output needs nothing (encoding/json escapes them).
func Escape(s string) string { return escape(s, false) }

// EscapeText is Escape keeping line breaks ("\n"): for multi-line messages, such as errors.
func EscapeText(s string) string { return escape(s, true) }

func escape(s string, keepNewline bool) string {
	if clean(s, keepNewline) {
		return s
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
		case r == '\n' && keepNewline:
			b.WriteByte('\n')
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		case r >= 0x80 && r <= 0x9f:
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func clean(s string, keepNewline bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return utf8.ValidString(s[i:]) && !hasC1(s[i:])
		}
		if (c < 0x20 && !(c == '\n' && keepNewline)) || c == 0x7f {
			return false
		}
	}
	return true
}

func hasC1(s string) bool {
	for _, r := range s {
		if r >= 0x80 && r <= 0x9f {
			return true
		}
	}
	return false
}

// EscapeStrings applies EscapeText to every settable string reachable from v (a pointer to a
// report: structs, slices, arrays, maps, pointers and interfaces), so that a report read from
// files is safe to render as text however its renderer prints it. Map keys are escaped too.
func EscapeStrings(v any) {
	escapeValue(reflect.ValueOf(v), 0)
}

func escapeValue(v reflect.Value, depth int) {
	if depth > 64 || !v.IsValid() {
		return // reports are trees, far shallower; the bound only guards against a cycle
	}
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			if e := EscapeText(v.String()); e != v.String() {
				v.SetString(e)
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			escapeValue(v.Elem(), depth+1)
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		e := v.Elem()
		if e.Kind() == reflect.Pointer {
			escapeValue(e, depth+1)
			return
		}
		if v.CanSet() {
			// A value in an interface cannot be changed in place: copy, escape, put back.
			c := reflect.New(e.Type()).Elem()
			c.Set(e)
			escapeValue(c, depth+1)
			v.Set(c)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				escapeValue(v.Field(i), depth+1)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			escapeValue(v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		iter := v.MapRange()
		type kv struct{ k, v reflect.Value }
		var changed []kv
		var old []reflect.Value
		for iter.Next() {
			k := reflect.New(iter.Key().Type()).Elem()
			k.Set(iter.Key())
			val := reflect.New(iter.Value().Type()).Elem()
			val.Set(iter.Value())
			escapeValue(k, depth+1)
			escapeValue(val, depth+1)
			if !k.Equal(iter.Key()) {
				old = append(old, iter.Key())
			}
			changed = append(changed, kv{k, val})
		}
		for _, k := range old {
			v.SetMapIndex(k, reflect.Value{})
		}
		for _, c := range changed {
			v.SetMapIndex(c.k, c.v)
		}
	}
}
