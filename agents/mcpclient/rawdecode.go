package mcpclient

// Reading a downstream's answer without decoding it with encoding/json
// (README, P19): a raw call reads every answer's envelope (rawMessage) and
// the members of its result a caller acts on (peekResult), which were two
// encoding/json decodes per proxied call. Valid JSON objects are read with
// agents/internal/jsonmember, names matched as encoding/json matches them
// (case-insensitively, in order, a null leaving a field as it is);
// anything else (invalid JSON, not an object, a member of the wrong type,
// a repeated error member) goes to encoding/json, which also writes the
// errors. FuzzDecodeRawMessage and FuzzPeekResult hold the two together.

import (
	"encoding/json"
	"strings"

	"github.com/pallasgw/pallasgw/agents/internal/jsonmember"
)

// decodeRawMessage is json.Unmarshal(b, msg) for a zero msg.
func decodeRawMessage(b []byte, msg *rawMessage) error {
	if jsonmember.IsObject(b) && json.Valid(b) && readRawMessage(b, msg) {
		return nil
	}
	*msg = rawMessage{}
	return json.Unmarshal(b, msg)
}

// readRawMessage reads a valid JSON object into msg; false when it cannot
// be sure to give encoding/json's value without error.
func readRawMessage(b []byte, msg *rawMessage) bool {
	ok := true
	var errMember []byte
	nErr := 0
	jsonmember.Each(b, func(name string, v []byte) {
		switch {
		case strings.EqualFold(name, "id"):
			msg.ID = v
		case strings.EqualFold(name, "method"):
			ok = ok && readString(v, &msg.Method)
		case strings.EqualFold(name, "result"):
			msg.Result = v
		case strings.EqualFold(name, "error"):
			errMember, nErr = v, nErr+1
		}
	})
	if !ok || nErr > 1 {
		return false
	}
	if nErr == 1 && string(errMember) != "null" {
		return json.Unmarshal(errMember, &msg.Error) == nil
	}
	return true
}

// readString reads a JSON string into s as encoding/json does (null leaves
// s alone); false for any other type.
func readString(v []byte, s *string) bool {
	switch {
	case string(v) == "null":
		return true
	case len(v) > 0 && v[0] == '"':
		*s = jsonmember.Unquote(v)
		return true
	}
	return false
}

// readBool reads a JSON boolean into b as encoding/json does (null leaves b
// alone); false for any other type.
func readBool(v []byte, b *bool) bool {
	switch string(v) {
	case "null":
	case "true":
		*b = true
	case "false":
		*b = false
	default:
		return false
	}
	return true
}

// plainID reports a JSON string id without escapes equal to want, the
// common answer to a raw call (answers decodes anything else).
func plainID(raw json.RawMessage, want string) (match, sure bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false, false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return false, false
		}
	}
	return string(raw[1:len(raw)-1]) == want, true
}
