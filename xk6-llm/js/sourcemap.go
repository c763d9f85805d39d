package js

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// sobek looks a 1-based generated column up in a source map whose columns
// are 0-based (as every source map's are) and reports the 0-based source
// column it finds as if it were 1-based: an error in a transpiled module
// would point one column off. oneBasedSourceMap rewrites a map so that both
// its generated and its source columns count from 1, which is what that
// lookup needs.
//
// In the "mappings" field (source map v3) a line's first segment holds its
// generated column absolutely and the next ones relative to it, so one
// added to each line's first segment shifts the whole line; source columns
// are relative across the whole map, so one added to the first segment
// that has one shifts them all.
func oneBasedSourceMap(sourceMap []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(sourceMap, &m); err != nil {
		return nil, fmt.Errorf("source map: %w", err)
	}
	var mappings string
	if err := json.Unmarshal(m["mappings"], &mappings); err != nil {
		return nil, fmt.Errorf("source map mappings: %w", err)
	}
	shifted, err := shiftMappings(mappings)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(shifted)
	if err != nil {
		return nil, err
	}
	m["mappings"] = b
	return json.Marshal(m)
}

// shiftMappings adds one to every generated and source column of a
// mappings string.
func shiftMappings(mappings string) (string, error) {
	lines := strings.Split(mappings, ";")
	sourceShifted := false
	for i, line := range lines {
		if line == "" {
			continue
		}
		segs := strings.Split(line, ",")
		for j, seg := range segs {
			if j > 0 && sourceShifted {
				break
			}
			fields, err := decodeVLQ(seg)
			if err != nil {
				return "", fmt.Errorf("source map mappings line %d: %w", i+1, err)
			}
			if j == 0 && len(fields) > 0 {
				fields[0]++
			}
			if !sourceShifted && len(fields) >= 4 {
				fields[3]++
				sourceShifted = true
			}
			segs[j] = encodeVLQ(fields)
		}
		lines[i] = strings.Join(segs, ",")
	}
	return strings.Join(lines, ";"), nil
}

// vlqDigits are base64's digits, in value order.
const vlqDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// decodeVLQ reads a segment's base64 VLQ fields.
func decodeVLQ(seg string) ([]int, error) {
	var out []int
	shift, v := 0, 0
	for i := 0; i < len(seg); i++ {
		d := strings.IndexByte(vlqDigits, seg[i])
		if d < 0 {
			return nil, fmt.Errorf("bad VLQ digit %q", seg[i])
		}
		v += (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			if shift > 60 {
				return nil, errors.New("VLQ value too long")
			}
			continue
		}
		n := v >> 1
		if v&1 != 0 {
			n = -n
		}
		out = append(out, n)
		shift, v = 0, 0
	}
	if shift != 0 {
		return nil, errors.New("truncated VLQ value")
	}
	return out, nil
}

// encodeVLQ writes fields as base64 VLQ.
func encodeVLQ(fields []int) string {
	var b strings.Builder
	for _, n := range fields {
		v := n << 1
		if n < 0 {
			v = (-n << 1) | 1
		}
		for {
			d := v & 31
			v >>= 5
			if v != 0 {
				d |= 32
			}
			b.WriteByte(vlqDigits[d])
			if v == 0 {
				break
			}
		}
	}
	return b.String()
}

// inlineSourceMap is the comment line that carries sourceMap in a module
// for sobek's parser.
func inlineSourceMap(sourceMap []byte) string {
	return "//# sourceMappingURL=data:application/json;base64," + base64.StdEncoding.EncodeToString(sourceMap)
}
