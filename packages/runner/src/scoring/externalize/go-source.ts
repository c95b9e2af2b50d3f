/**
 * The host's Go assertion rewriter (scoring/externalize/go.ts), kept as Go source: built once per
 * source version with the host's Go toolchain and run over the trusted hidden test files (never
 * the workspace). Go's own parser (go/ast) and constant evaluator (go/constant) read the files.
 */
import { GO_ALIAS } from "./go-alias.js";
import { GO_EMITTER } from "./go-emitter.js";
import { GO_FUZZ } from "./go-fuzz.js";
import { GO_HELPER_PASS } from "./go-helper-pass.js";
import { GO_HELPERS } from "./go-helpers.js";

const BT = "`";

const MAIN = String.raw`// The host's Go assertion rewriter (scoring/externalize/go.ts): reads {files, graded} on stdin,
// prints {files, sites, tests}. Go's own parser (go/ast) and constant evaluator (go/constant) run
// on the host over the trusted hidden test files, never the workspace. A graded test's
// ${BT}if got != <constant> { t.Errorf(...) }${BT} (an operand of a top-level ${BT}||${BT} chain too) and a table
// test's ${BT}if got != tc.want${BT} over a local table whose ${BT}want${BT} fields are all constants become an
// emission of ${BT}got${BT}; the constants leave the file. Anything else stays as written.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

type inFile struct {
	Path string ${BT}json:"path"${BT}
	Text string ${BT}json:"text"${BT}
}

type site struct {
	Site     string         ${BT}json:"site"${BT}
	Test     string         ${BT}json:"test"${BT}
	Kind     string         ${BT}json:"kind"${BT}
	Expected map[string]any ${BT}json:"expected"${BT}
	Opts     map[string]any ${BT}json:"opts"${BT}
	Count    string         ${BT}json:"count"${BT}
	Pair     bool           ${BT}json:"pair"${BT}
}

type coverage struct {
	Sites int      ${BT}json:"sites"${BT}
	Kept  []string ${BT}json:"kept"${BT}
}

type outFile struct {
	Path string  ${BT}json:"path"${BT}
	Text *string ${BT}json:"text"${BT}
}

type edit struct {
	a, b int
	text string
}

var basic = map[string]bool{"string": true, "bool": true, "int": true, "int8": true, "int16": true,
	"int32": true, "int64": true, "uint": true, "uint8": true, "uint16": true, "uint32": true,
	"uint64": true, "uintptr": true, "byte": true, "rune": true, "float64": true}

func randomID() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// constOf evaluates an expression made of literals only.
func constOf(e ast.Expr) (constant.Value, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		v := constant.MakeFromLiteral(x.Value, x.Kind, 0)
		return v, v.Kind() != constant.Unknown
	case *ast.ParenExpr:
		return constOf(x.X)
	case *ast.Ident:
		if x.Name == "true" || x.Name == "false" {
			return constant.MakeBool(x.Name == "true"), true
		}
	case *ast.UnaryExpr:
		if v, ok := constOf(x.X); ok && (x.Op == token.SUB || x.Op == token.ADD) && v.Kind() != constant.String && v.Kind() != constant.Bool {
			return constant.UnaryOp(x.Op, v, 0), true
		}
	case *ast.BinaryExpr:
		a, ok1 := constOf(x.X)
		b, ok2 := constOf(x.Y)
		if !ok1 || !ok2 || a.Kind() == constant.Bool || b.Kind() == constant.Bool {
			return nil, false
		}
		strs := a.Kind() == constant.String || b.Kind() == constant.String
		if x.Op == token.ADD || (!strs && (x.Op == token.SUB || x.Op == token.MUL)) {
			if strs && (a.Kind() != constant.String || b.Kind() != constant.String) {
				return nil, false
			}
			return constant.BinaryOp(a, x.Op, b), true
		}
	case *ast.CallExpr:
		// a conversion to a basic type: uint64(42)
		if f, ok := x.Fun.(*ast.Ident); ok && basic[f.Name] && f.Name != "string" && len(x.Args) == 1 {
			if v, ok := constOf(x.Args[0]); ok && v.Kind() != constant.String {
				if strings.HasPrefix(f.Name, "float") {
					return constant.ToFloat(v), true
				}
				return constant.ToInt(v), constant.ToInt(v).Kind() == constant.Int
			}
		}
	}
	return nil, false
}

// canonOf renders a constant as the emitter renders a value of its kind; ok false when it cannot
// be compared exactly (a non-UTF-8 string, a float that is not a float64 exactly).
func canonOf(v constant.Value) (map[string]any, bool) {
	switch v.Kind() {
	case constant.Bool:
		return map[string]any{"t": "bool", "v": constant.BoolVal(v)}, true
	case constant.String:
		s := constant.StringVal(v)
		return map[string]any{"t": "str", "v": s}, utf8.ValidString(s)
	case constant.Int:
		return map[string]any{"t": "int", "v": v.ExactString()}, true
	case constant.Float:
		f, exact := constant.Float64Val(v)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, false
		}
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			return map[string]any{"t": "int", "v": strconv.FormatInt(int64(f), 10)}, exact
		}
		return map[string]any{"t": "float", "v": strconv.FormatFloat(f, 'g', -1, 64)}, exact
	}
	return nil, false
}

func unparen(e ast.Expr) ast.Expr {
	for {
		p, ok := e.(*ast.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

// orChain: the operands of a top-level ${BT}a || b || c${BT}.
func orChain(e ast.Expr) []ast.Expr {
	e = unparen(e)
	if b, ok := e.(*ast.BinaryExpr); ok && b.Op == token.LOR {
		return append(orChain(b.X), orChain(b.Y)...)
	}
	return []ast.Expr{e}
}

type rewriter struct {
	fset   *token.FileSet
	src    []byte
	fn     *ast.FuncDecl
	test   string
	suffix string
	edits  []edit
	keyed  map[*ast.RangeStmt]bool
	sites  []site
	kept   []string
}

func (r *rewriter) off(p token.Pos) int { return r.fset.Position(p).Offset }
func (r *rewriter) text(n ast.Node) string {
	return string(r.src[r.off(n.Pos()):r.off(n.End())])
}

func (r *rewriter) emit(sid string, computed ast.Expr) string {
	return "_fgEmit" + r.suffix + "(" + sid + ", " + strconv.Quote(r.test) + ", (" + r.text(computed) + "))"
}

func (r *rewriter) addSite(expected map[string]any, count string) string {
	id := randomID()
	r.sites = append(r.sites, site{Site: id, Test: r.test, Kind: "eq", Expected: expected,
		Opts: map[string]any{}, Count: count, Pair: false})
	return id
}

// parents maps each node of the function to its parent.
func parentsOf(fn *ast.FuncDecl) map[ast.Node]ast.Node {
	out := map[ast.Node]ast.Node{}
	var stack []ast.Node
	ast.Inspect(fn, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if len(stack) > 0 {
			out[n] = stack[len(stack)-1]
		}
		stack = append(stack, n)
		return true
	})
	return out
}

// unconditional: the statement runs once per call of the test (directly in its body).
func unconditional(fn *ast.FuncDecl, n ast.Node, parents map[ast.Node]ast.Node) bool {
	return parents[n] == fn.Body
}

func (r *rewriter) direct(ifs *ast.IfStmt, once bool) {
	all := true
	for _, op := range orChain(ifs.Cond) {
		b, ok := op.(*ast.BinaryExpr)
		if !ok || b.Op != token.NEQ {
			all = false
			continue
		}
		var exp, comp ast.Expr
		if _, c := constOf(b.Y); c {
			exp, comp = b.Y, b.X
		} else if _, c := constOf(b.X); c {
			exp, comp = b.X, b.Y
		}
		if exp == nil {
			all = false
			continue
		}
		if _, c := constOf(comp); c {
			all = false
			continue
		}
		v, _ := constOf(exp)
		cn, ok := canonOf(v)
		if !ok || (cn["t"] == "float") {
			r.kept = append(r.kept, "an expected float or non-UTF-8 string (compared where the type is unknown)")
			all = false
			continue
		}
		count := "any"
		if once && all {
			count = "one"
		}
		sid := r.addSite(cn, count)
		r.edits = append(r.edits, edit{r.off(b.Pos()), r.off(b.End()), r.emit(strconv.Quote(sid), comp)})
	}
}

// tableOf: the composite literal a range statement ranges over (a local bound once, or inline).
func (r *rewriter) tableOf(rng *ast.RangeStmt) (*ast.CompositeLit, *ast.Ident) {
	if c, ok := unparen(rng.X).(*ast.CompositeLit); ok {
		return c, nil
	}
	id, ok := rng.X.(*ast.Ident)
	if !ok {
		return nil, nil
	}
	var lit *ast.CompositeLit
	binds := 0
	ast.Inspect(r.fn.Body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			for i, l := range s.Lhs {
				if li, ok := l.(*ast.Ident); ok && li.Name == id.Name {
					binds++
					if s.Tok == token.DEFINE && len(s.Rhs) == len(s.Lhs) {
						lit, _ = s.Rhs[i].(*ast.CompositeLit)
					}
				}
			}
		case *ast.ValueSpec:
			for i, l := range s.Names {
				if l.Name == id.Name {
					binds++
					if len(s.Values) == len(s.Names) {
						lit, _ = s.Values[i].(*ast.CompositeLit)
					}
				}
			}
		}
		return true
	})
	if binds != 1 || lit == nil {
		return nil, nil
	}
	return lit, id
}

// fieldOf: the struct field ${BT}name${BT}'s position and basic type in a ${BT}[]struct{...}${BT} table.
func fieldOf(lit *ast.CompositeLit, name string) (int, string, bool) {
	arr, ok := lit.Type.(*ast.ArrayType)
	if !ok {
		return 0, "", false
	}
	st, ok := arr.Elt.(*ast.StructType)
	if !ok {
		return 0, "", false
	}
	i := 0
	for _, f := range st.Fields.List {
		names := f.Names
		if len(names) == 0 {
			i++
			continue
		}
		for _, n := range names {
			if n.Name == name {
				t, ok := f.Type.(*ast.Ident)
				if !ok || !basic[t.Name] {
					return 0, "", false
				}
				return i, t.Name, true
			}
			i++
		}
	}
	return 0, "", false
}

var reporting = map[string]bool{"Errorf": true, "Error": true, "Fatalf": true, "Fatal": true, "Logf": true, "Log": true, "Skipf": true}

// onlyReported: every use of ${BT}v.field${BT} (and of v itself) in the range body is the compared one
// or an argument of t.Errorf / t.Fatalf / t.Logf.
func onlyReported(body *ast.BlockStmt, v string, field string, skip map[ast.Node]bool) bool {
	ok := true
	var walk func(n ast.Node, inReport bool)
	walk = func(n ast.Node, inReport bool) {
		ast.Inspect(n, func(m ast.Node) bool {
			if m == nil || !ok {
				return false
			}
			if skip[m] {
				return false
			}
			if c, is := m.(*ast.CallExpr); is && !inReport {
				if s, is := c.Fun.(*ast.SelectorExpr); is && reporting[s.Sel.Name] {
					for _, a := range c.Args {
						walk(a, true)
					}
					return false
				}
			}
			if s, is := m.(*ast.SelectorExpr); is {
				if x, is := s.X.(*ast.Ident); is && x.Name == v {
					if s.Sel.Name == field && !inReport {
						ok = false
					}
					return false
				}
			}
			if x, is := m.(*ast.Ident); is && x.Name == v {
				ok = false // the whole element used (passed on, copied): its field may be read
			}
			return true
		})
	}
	walk(body, false)
	return ok
}

func (r *rewriter) table(ifs *ast.IfStmt, rng *ast.RangeStmt, once bool) bool {
	ops := orChain(ifs.Cond)
	b, ok := ops[0].(*ast.BinaryExpr)
	if !ok || b.Op != token.NEQ || rng.Tok != token.DEFINE {
		return false
	}
	val, ok := rng.Value.(*ast.Ident)
	if !ok {
		return false
	}
	var sel *ast.SelectorExpr
	var comp ast.Expr
	skip := map[ast.Node]bool{b: true}
	for _, pair := range [][2]ast.Expr{{b.Y, b.X}, {b.X, b.Y}} {
		if s, is := pair[0].(*ast.SelectorExpr); is {
			if x, is := s.X.(*ast.Ident); is && x.Name == val.Name {
				sel, comp = s, pair[1]
				break
			}
		}
		if s, at := aliasOf(pair[0], val, rng.Body, ifs); s != nil {
			sel, comp, skip[at] = s, pair[1], true
			break
		}
	}
	if sel == nil {
		return false
	}
	pick, ok := r.tableSites(rng, val, sel, skip, once)
	if !ok {
		return false
	}
	r.edits = append(r.edits, edit{r.off(b.Pos()), r.off(b.End()), r.emit(pick, comp)})
	return true
}

// errTable: a table test's ${BT}if tc.err && err == nil { … } else if !tc.err && err != nil { … }${BT}
// over a constant bool field: an emission of ${BT}err != nil${BT} expecting the row's ${BT}err${BT}.
func (r *rewriter) errTable(ifs *ast.IfStmt, rng *ast.RangeStmt, once bool) bool {
	val, ok := rng.Value.(*ast.Ident)
	if !ok || rng.Tok != token.DEFINE {
		return false
	}
	first, ok := unparen(ifs.Cond).(*ast.BinaryExpr)
	other, ok2 := ifs.Else.(*ast.IfStmt)
	if !ok || !ok2 || first.Op != token.LAND || other.Else != nil || other.Init != nil {
		return false
	}
	second, ok := unparen(other.Cond).(*ast.BinaryExpr)
	if !ok || second.Op != token.LAND {
		return false
	}
	sel, ok := unparen(first.X).(*ast.SelectorExpr)
	not, ok2 := unparen(second.X).(*ast.UnaryExpr)
	if !ok || !ok2 || not.Op != token.NOT {
		return false
	}
	sel2, ok := unparen(not.X).(*ast.SelectorExpr)
	if x, is := sel.X.(*ast.Ident); !ok || !is || x.Name != val.Name || r.text(sel) != r.text(sel2) {
		return false
	}
	isNil := func(e ast.Expr, op token.Token) (string, bool) {
		b, ok := unparen(e).(*ast.BinaryExpr)
		if !ok || b.Op != op {
			return "", false
		}
		n, ok := b.Y.(*ast.Ident)
		id, ok2 := b.X.(*ast.Ident)
		if !ok || !ok2 || n.Name != "nil" {
			return "", false
		}
		return id.Name, true
	}
	e1, ok := isNil(first.Y, token.EQL)
	e2, ok2 := isNil(second.Y, token.NEQ)
	if !ok || !ok2 || e1 != e2 {
		return false
	}
	if _, typ, ok := fieldOf(mustTable(r.tableOf(rng)), sel.Sel.Name); !ok || typ != "bool" {
		return false
	}
	pick, ok := r.tableSites(rng, val, sel, map[ast.Node]bool{ifs.Cond: true, other.Cond: true}, once)
	if !ok {
		return false
	}
	r.edits = append(r.edits,
		edit{r.off(ifs.Cond.Pos()), r.off(ifs.Cond.End()), r.emit(pick, second.Y)},
		edit{r.off(other.Cond.Pos()), r.off(other.Cond.End()), "false"})
	return true
}

func mustTable(lit *ast.CompositeLit, _ *ast.Ident) *ast.CompositeLit {
	if lit == nil {
		return &ast.CompositeLit{}
	}
	return lit
}

// tableSites: one site per row of the table rng ranges over, expecting the row's constant ${BT}sel${BT}
// field (which leaves the row); the Go expression picking the row's site id, or ok false.
func (r *rewriter) tableSites(rng *ast.RangeStmt, val *ast.Ident, sel *ast.SelectorExpr, skip map[ast.Node]bool, once bool) (string, bool) {
	lit, tableName := r.tableOf(rng)
	if lit == nil {
		r.kept = append(r.kept, "a table comparison over a table not bound once to a literal in the test")
		return "", false
	}
	if tableName != nil {
		uses := 0
		ast.Inspect(r.fn.Body, func(n ast.Node) bool {
			if id, is := n.(*ast.Ident); is && id.Name == tableName.Name {
				uses++
			}
			return true
		})
		if uses != 2 {
			r.kept = append(r.kept, "a table used elsewhere than its range")
			return "", false
		}
	}
	pos, typ, ok := fieldOf(lit, sel.Sel.Name)
	if !ok || !onlyReported(rng.Body, val.Name, sel.Sel.Name, skip) {
		r.kept = append(r.kept, "a table field that is not of a basic type or is read elsewhere")
		return "", false
	}
	var canons []map[string]any
	var valueEdits []edit
	for _, el := range lit.Elts {
		row, is := el.(*ast.CompositeLit)
		if !is {
			r.kept = append(r.kept, "a table row that is not a composite literal")
			return "", false
		}
		var v ast.Expr
		for i, f := range row.Elts {
			if kv, is := f.(*ast.KeyValueExpr); is {
				if k, is := kv.Key.(*ast.Ident); is && k.Name == sel.Sel.Name {
					v = kv.Value
				}
			} else if i == pos {
				v = f
			}
		}
		var cn map[string]any
		if v == nil {
			cn = zeroCanon(typ)
		} else {
			c, is := constOf(v)
			if !is {
				r.kept = append(r.kept, "a table row whose expected field is not a constant")
				return "", false
			}
			if cn, is = canonOf(c); !is || (typ != "float64" && cn["t"] == "float") {
				r.kept = append(r.kept, "a table row whose expected constant the emission cannot match exactly")
				return "", false
			}
			valueEdits = append(valueEdits, edit{r.off(v.Pos()), r.off(v.End()), "*new(" + typ + ")"})
		}
		canons = append(canons, cn)
	}
	if len(canons) == 0 {
		return "", false
	}
	idx := "_fgi" + r.suffix
	if k, is := rng.Key.(*ast.Ident); is && k.Name != "_" {
		idx = k.Name
	} else if rng.Key == nil {
		return "", false
	} else if !r.keyed[rng] {
		r.keyed[rng] = true
		r.edits = append(r.edits, edit{r.off(rng.Key.Pos()), r.off(rng.Key.End()), idx})
	}
	count := "any"
	if once {
		count = "one"
	}
	var ids []string
	for _, cn := range canons {
		ids = append(ids, strconv.Quote(r.addSite(cn, count)))
	}
	r.edits = append(r.edits, valueEdits...)
	return "[]string{" + strings.Join(ids, ", ") + "}[" + idx + "]", true
}

func zeroCanon(typ string) map[string]any {
	switch typ {
	case "string":
		return map[string]any{"t": "str", "v": ""}
	case "bool":
		return map[string]any{"t": "bool", "v": false}
	}
	return map[string]any{"t": "int", "v": "0"}
}

// leaves: no continue, break, return or goto in the body (every row reaches the comparison).
func straight(body *ast.BlockStmt, upTo ast.Node) bool {
	ok := true
	ast.Inspect(body, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.BranchStmt, *ast.ReturnStmt:
			ok = false
		case *ast.FuncLit:
			return false
		}
		return ok
	})
	return ok
}

func (r *rewriter) run() {
	parents := parentsOf(r.fn)
	ast.Inspect(r.fn.Body, func(n ast.Node) bool {
		ifs, ok := n.(*ast.IfStmt)
		if !ok {
			return true
		}
		if rng, ok := parents[parents[ifs]].(*ast.RangeStmt); ok && parents[ifs] == rng.Body {
			once := parents[rng] == r.fn.Body && straight(rng.Body, ifs)
			if r.table(ifs, rng, once) || r.errTable(ifs, rng, once) {
				return false
			}
		}
		r.direct(ifs, unconditional(r.fn, ifs, parents))
		return true
	})
}

func rewriteFile(f inFile, graded map[string]bool, tests map[string]coverage, suffix string, extra []edit) (*string, []site) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, f.Path, f.Text, parser.SkipObjectResolution)
	if err != nil {
		for _, d := range declsByName(f.Text) {
			if graded[d] {
				tests[d] = coverage{Kept: []string{"the file does not parse on the host: " + err.Error()}}
			}
		}
		return nil, nil
	}
	src := []byte(f.Text)
	edits := append([]edit{}, extra...)
	var sites []site
	for _, d := range file.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Body == nil || !graded[fn.Name.Name] {
			continue
		}
		r := &rewriter{fset: fset, src: src, fn: fn, test: fn.Name.Name, suffix: suffix, keyed: map[*ast.RangeStmt]bool{}}
		r.fuzzSeeds(graded)
		r.run()
		kept := r.kept
		if kept == nil {
			kept = []string{}
		}
		tests[fn.Name.Name] = coverage{Sites: len(r.sites), Kept: kept}
		edits = append(edits, r.edits...)
		sites = append(sites, r.sites...)
	}
	if len(edits) == 0 {
		return nil, sites
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].a > edits[j].a })
	out := src
	for _, e := range edits {
		out = append(append(append([]byte{}, out[:e.a]...), e.text...), out[e.b:]...)
	}
	at := fset.Position(file.Name.End()).Offset
	head := strings.ReplaceAll(imports, "SUFFIX", suffix)
	out = append(append(append([]byte{}, out[:at]...), head...), out[at:]...)
	out = append(out, strings.ReplaceAll(emitter, "SUFFIX", suffix)...)
	if _, err := parser.ParseFile(token.NewFileSet(), f.Path, out, 0); err != nil {
		for _, s := range sites {
			tests[s.Test] = coverage{Kept: []string{"the rewritten file does not parse: " + err.Error()}}
		}
		return nil, nil
	}
	text := string(bytes.Clone(out))
	return &text, sites
}

// rewriteAll rewrites every file with the helpers' plan; false where a file with plan edits did
// not come out rewritten (its edits would leave the others inconsistent).
func rewriteAll(files []inFile, graded map[string]bool, suffixes map[string]string, plan helperPlan, outFiles *[]outFile, outSites *[]site, tests map[string]coverage) bool {
	for _, f := range files {
		if !strings.HasSuffix(f.Path, "_test.go") {
			*outFiles = append(*outFiles, outFile{Path: f.Path})
			continue
		}
		text, sites := rewriteFile(f, graded, tests, suffixes[f.Path], plan.edits[f.Path])
		if text == nil && len(plan.edits[f.Path]) > 0 {
			return false
		}
		*outFiles = append(*outFiles, outFile{Path: f.Path, Text: text})
		*outSites = append(*outSites, sites...)
	}
	for test, n := range plan.count {
		c := tests[test]
		c.Sites += n
		if c.Kept == nil {
			c.Kept = []string{}
		}
		tests[test] = c
	}
	*outSites = append(*outSites, plan.sites...)
	return true
}

func declsByName(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "func Test") {
			name := strings.TrimPrefix(l, "func ")
			if i := strings.IndexByte(name, '('); i > 0 {
				out = append(out, name[:i])
			}
		}
	}
	return out
}

func main() {
	var req struct {
		Files  []inFile ${BT}json:"files"${BT}
		Graded []string ${BT}json:"graded"${BT}
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		os.Stderr.WriteString("the request is not JSON: " + err.Error() + "\n")
		os.Exit(2)
	}
	graded := map[string]bool{}
	for _, g := range req.Graded {
		graded[g] = true
	}
	out := struct {
		Files []outFile           ${BT}json:"files"${BT}
		Sites []site              ${BT}json:"sites"${BT}
		Tests map[string]coverage ${BT}json:"tests"${BT}
	}{Files: []outFile{}, Sites: []site{}, Tests: map[string]coverage{}}
	suffixes := map[string]string{}
	for _, f := range req.Files {
		suffixes[f.Path] = randomID()[:8]
	}
	plan := planHelpers(req.Files, graded, suffixes)
	if !rewriteAll(req.Files, graded, suffixes, plan, &out.Files, &out.Sites, out.Tests) {
		// a file the helpers' edits left unparsable: every file again without them
		out.Files, out.Sites, out.Tests = []outFile{}, []site{}, map[string]coverage{}
		rewriteAll(req.Files, graded, suffixes, helperPlan{}, &out.Files, &out.Sites, out.Tests)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(3)
	}
}
`;

/** The rewriter's Go program (one file, package main): its emitter go-emitter.ts, its table-alias part go-alias.ts, its table helpers go-helpers.ts and go-helper-pass.ts, its fuzz seeds go-fuzz.ts. */
export const GO_REWRITER = [MAIN, GO_EMITTER, GO_ALIAS, GO_HELPERS, GO_HELPER_PASS, GO_FUZZ].join("\n");
