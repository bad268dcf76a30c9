package logformat

import (
	"bytes"
	"encoding/json"
)

// OperatorMetadata is a stateful operator's metadata file: v1 at
// state/<op>/_metadata/metadata, v2 (transformWithState) at
// state/<op>/_metadata/v2/<batchId>; "v<N>\n" then one JSON document.
type OperatorMetadata struct {
	Version      int
	OperatorID   int64
	OperatorName string
	Stores       []StoreMetadata
	// Raw is the JSON document as in the file (without the final newline).
	// Marshal writes Raw when it is set, so parse→Marshal is exact; clear
	// it after editing the typed fields.
	Raw json.RawMessage
	// OperatorPropertiesJSON is v2's operatorPropertiesJson string.
	OperatorPropertiesJSON string
	TrailingNewline        bool
}

// StoreMetadata describes one state store of the operator.
type StoreMetadata struct {
	StoreName        string
	NumColsPrefixKey int
	NumPartitions    int
	SchemaFilePath   string // v2 stateSchemaFilePath
}

// ParseOperatorMetadata parses the file the way OperatorStateMetadataUtils
// reads it: BufferedReader.readLine for the version (max v2), json4s for
// the rest.
func ParseOperatorMetadata(file string, data []byte) (*OperatorMetadata, error) {
	if e := checkLineLength(file, data); e != nil {
		return nil, e
	}
	if len(data) == 0 {
		return nil, &Error{File: file, Line: 1, Kind: KindEmpty,
			Expected: `a version header like "v1"`, Got: `""`}
	}
	header, rest := data, []byte(nil)
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		header, rest = data[:i], data[i+1:]
		if data[i] == '\r' && len(rest) > 0 && rest[0] == '\n' {
			rest = rest[1:]
		}
	}
	ver, verr := parseVersionHeader(file, 1, header, OperatorMetadataMaxVersion)
	if verr != nil {
		return nil, verr
	}
	m := &OperatorMetadata{Version: ver}
	if n := len(rest); n > 0 && rest[n-1] == '\n' {
		m.TrailingNewline = true
		rest = rest[:n-1]
	}
	const expected = "operator metadata JSON"
	if len(javaTrim(rest)) == 0 {
		return nil, &Error{File: file, Line: 2, Kind: KindMissingMetadata, Expected: expected, Got: excerpt(string(rest))}
	}
	kind, s, e, je := scanDocument(rest)
	if je != nil {
		return nil, badJSON(file, 2, expected, rest, je)
	}
	if kind != jObject {
		return nil, badJSONShape(file, 2, expected+" object", rest)
	}
	m.Raw = json.RawMessage(string(rest))
	obj := rest[s:e]
	var ferr *Error
	seenInfo, seenStores, seenProps := false, false, false
	fail := func(field, want string, v []byte) *jsonErr {
		if ferr == nil {
			ferr = fieldErr(file, 2, field, want, v)
		}
		return errStop
	}
	_, je = scanObject(obj, 0, 1, func(key []byte, kind jsonKind, vs, ve int) *jsonErr {
		v := obj[vs:ve]
		switch string(key) {
		case "operatorInfo":
			if kind != jObject {
				return fail("operatorInfo", "an object", v)
			}
			seenID, seenName := false, false
			_, err := scanObject(obj, vs, 1, func(k []byte, kk jsonKind, s2, e2 int) *jsonErr {
				switch string(k) {
				case "operatorId":
					n, ok := int64Value(obj, s2, e2)
					if kk != jNumber || !ok {
						return fail("operatorInfo.operatorId", "an integer", obj[s2:e2])
					}
					m.OperatorID, seenID = n, true
				case "operatorName":
					if kk != jString {
						return fail("operatorInfo.operatorName", "a string", obj[s2:e2])
					}
					m.OperatorName, seenName = stringValue(obj, s2, e2), true
				}
				return nil
			})
			if err == nil && !(seenID && seenName) {
				return fail("operatorInfo", "an object with operatorId and operatorName", v)
			}
			seenInfo = true
			return err
		case "stateStoreInfo":
			if kind != jArray {
				return fail("stateStoreInfo", "an array", v)
			}
			m.Stores = []StoreMetadata{}
			seenStores = true
			_, err := scanArrayFn(obj, vs, 1, func(ek jsonKind, s2, e2 int) *jsonErr {
				if ek != jObject {
					return fail("stateStoreInfo[]", "an object", obj[s2:e2])
				}
				var st StoreMetadata
				seen := 0
				_, err := scanObject(obj, s2, 1, func(k []byte, kk jsonKind, s3, e3 int) *jsonErr {
					if ver < 2 && string(k) == "stateSchemaFilePath" {
						return nil // not a field of v1's StateStoreMetadataV1: json4s ignores it
					}
					switch string(k) {
					case "storeName", "stateSchemaFilePath":
						if kk != jString {
							return fail("stateStoreInfo[]."+string(k), "a string", obj[s3:e3])
						}
						if string(k) == "storeName" {
							st.StoreName = stringValue(obj, s3, e3)
							seen |= 1
						} else {
							st.SchemaFilePath = stringValue(obj, s3, e3)
							seen |= 8
						}
					case "numColsPrefixKey", "numPartitions":
						n, ok := int64Value(obj, s3, e3)
						if kk != jNumber || !ok || n != int64(int32(n)) {
							return fail("stateStoreInfo[]."+string(k), "a 32-bit integer", obj[s3:e3])
						}
						if k[3] == 'C' {
							st.NumColsPrefixKey = int(n)
							seen |= 2
						} else {
							st.NumPartitions = int(n)
							seen |= 4
						}
					}
					return nil
				})
				if err != nil {
					return err
				}
				want, names := 7, "storeName, numColsPrefixKey and numPartitions"
				if ver >= 2 {
					want, names = 15, "storeName, numColsPrefixKey, numPartitions and stateSchemaFilePath"
				}
				if seen&want != want {
					return fail("stateStoreInfo[]", "an object with "+names, obj[s2:e2])
				}
				m.Stores = append(m.Stores, st)
				return nil
			})
			return err
		case "operatorPropertiesJson":
			if ver < 2 {
				return nil // not a field of v1's OperatorStateMetadataV1: json4s ignores it
			}
			if kind != jString {
				return fail("operatorPropertiesJson", "a string", v)
			}
			m.OperatorPropertiesJSON, seenProps = stringValue(obj, vs, ve), true
		}
		return nil
	})
	if ferr != nil {
		return nil, ferr
	}
	if je != nil {
		return nil, badJSON(file, 2, expected, rest, je)
	}
	switch {
	case !seenInfo:
		return nil, &Error{File: file, Line: 2, Kind: KindBadJSON, Expected: `a field "operatorInfo"`,
			Got: excerpt(string(rest))}
	case !seenStores:
		return nil, &Error{File: file, Line: 2, Kind: KindBadJSON, Expected: `a field "stateStoreInfo"`,
			Got: excerpt(string(rest))}
	case ver >= 2 && !seenProps:
		return nil, &Error{File: file, Line: 2, Kind: KindBadJSON, Expected: `a field "operatorPropertiesJson"`,
			Got: excerpt(string(rest))}
	}
	return m, nil
}

// Marshal returns the file: "v<N>\n" and Raw, or the JSON json4s writes
// for the typed fields when Raw is nil.
func (m *OperatorMetadata) Marshal() []byte {
	v := m.Version
	if v == 0 {
		v = 1
	}
	b := appendHeader(nil, v)
	b = append(b, '\n')
	if m.Raw != nil {
		b = append(b, m.Raw...)
	} else {
		b = m.appendJSON(b, v)
	}
	if m.TrailingNewline {
		b = append(b, '\n')
	}
	return b
}

func (m *OperatorMetadata) appendJSON(b []byte, v int) []byte {
	b = append(b, `{"operatorInfo":{"operatorId":`...)
	b = appendInt(b, m.OperatorID)
	b = append(b, `,"operatorName":`...)
	b = appendJSONString(b, m.OperatorName)
	b = append(b, `},"stateStoreInfo":[`...)
	for i, s := range m.Stores {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"storeName":`...)
		b = appendJSONString(b, s.StoreName)
		b = append(b, `,"numColsPrefixKey":`...)
		b = appendInt(b, int64(s.NumColsPrefixKey))
		b = append(b, `,"numPartitions":`...)
		b = appendInt(b, int64(s.NumPartitions))
		if v >= 2 {
			b = append(b, `,"stateSchemaFilePath":`...)
			b = appendJSONString(b, s.SchemaFilePath)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if v >= 2 {
		b = append(b, `,"operatorPropertiesJson":`...)
		b = appendJSONString(b, m.OperatorPropertiesJSON)
	}
	return append(b, '}')
}
