/**
 * The Go text a rewritten test file gets (go-source.ts composes it into GO_REWRITER as two Go
 * constants, SUFFIX replaced per file): the emitter (a value rendered by its kind and written as one
 * JSON line to `$FLAKEGYM_EMIT`; a pair's two sides) and the imports it needs.
 */
const BT = "`";

export const GO_EMITTER = String.raw`
const emitter = ${BT}

func _fgEmitSUFFIX(site, node string, v interface{}) bool {
	return _fgWriteSUFFIX(map[string]interface{}{"s": site, "n": node, "v": _fgCanonSUFFIX(v)})
}

// _fgPairSUFFIX: a comparison whose two sides the test computes, in the case a seed of ids names:
// both sides emitted (the host compares them), false; in any other case v != w, as written.
func _fgPairSUFFIX(ids map[string]string, node string, v, w interface{}) bool {
	site, ok := ids[node]
	if !ok {
		return v != w
	}
	return _fgWriteSUFFIX(map[string]interface{}{"s": site, "n": node, "v": _fgCanonSUFFIX(v), "w": _fgCanonSUFFIX(w)})
}

func _fgCanonSUFFIX(v interface{}) interface{} {
	rv := _fgreflectSUFFIX.ValueOf(v)
	var c interface{}
	switch rv.Kind() {
	case _fgreflectSUFFIX.Bool:
		c = map[string]interface{}{"t": "bool", "v": rv.Bool()}
	case _fgreflectSUFFIX.Int, _fgreflectSUFFIX.Int8, _fgreflectSUFFIX.Int16, _fgreflectSUFFIX.Int32, _fgreflectSUFFIX.Int64:
		c = map[string]interface{}{"t": "int", "v": _fgstrconvSUFFIX.FormatInt(rv.Int(), 10)}
	case _fgreflectSUFFIX.Uint, _fgreflectSUFFIX.Uint8, _fgreflectSUFFIX.Uint16, _fgreflectSUFFIX.Uint32, _fgreflectSUFFIX.Uint64, _fgreflectSUFFIX.Uintptr:
		c = map[string]interface{}{"t": "int", "v": _fgstrconvSUFFIX.FormatUint(rv.Uint(), 10)}
	case _fgreflectSUFFIX.Float64:
		f := rv.Float()
		if f == float64(int64(f)) && f < 1e15 && f > -1e15 {
			c = map[string]interface{}{"t": "int", "v": _fgstrconvSUFFIX.FormatInt(int64(f), 10)}
		} else if f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
			c = map[string]interface{}{"t": "unrenderable", "why": "non-finite float"}
		} else {
			c = map[string]interface{}{"t": "float", "v": _fgstrconvSUFFIX.FormatFloat(f, 'g', -1, 64)}
		}
	case _fgreflectSUFFIX.String:
		if s := rv.String(); _fgutf8SUFFIX.ValidString(s) {
			c = map[string]interface{}{"t": "str", "v": s}
		} else {
			c = map[string]interface{}{"t": "bytes", "v": _fghexSUFFIX.EncodeToString([]byte(s))}
		}
	default:
		c = map[string]interface{}{"t": "obj", "type": "go", "repr": ""}
	}
	return c
}

func _fgWriteSUFFIX(e map[string]interface{}) bool {
	line, err := _fgjsonSUFFIX.Marshal(e)
	if err != nil {
		line = []byte("{}")
	}
	f, err := _fgosSUFFIX.OpenFile(_fgosSUFFIX.Getenv("FLAKEGYM_EMIT"), _fgosSUFFIX.O_WRONLY|_fgosSUFFIX.O_APPEND|_fgosSUFFIX.O_CREATE, 0600)
	if err == nil {
		_, _ = f.Write(append(line, '\n'))
		_ = f.Close()
	}
	return false
}
${BT}

const imports = ${BT}
import (
	_fghexSUFFIX "encoding/hex"
	_fgjsonSUFFIX "encoding/json"
	_fgosSUFFIX "os"
	_fgreflectSUFFIX "reflect"
	_fgstrconvSUFFIX "strconv"
	_fgutf8SUFFIX "unicode/utf8"
)
${BT}

`;
