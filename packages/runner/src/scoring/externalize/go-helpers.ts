/**
 * The Go rewriter's reading of helpers that assert (go-source.ts composes it into GO_REWRITER):
 * go-humanize's `testList{{name, Comma(1000), "1,000"}, …}.validate(t)`, a method of a named table
 * type (`type testList []struct{…}`) whose body is one range over its receiver comparing two fields
 * of the row. Each call statement in a graded test's body sets the helper's package variable to its
 * test and its rows' site ids around the call (reset by a defer); the helper emits the computed
 * field under them, and compares as written where no call set them (another test, a subtest). The
 * expected field's constants leave each such call's rows (`*new(T)`), and so do the constants of
 * fields the helper only reports (a row's name often spells its expected value). Go text; it uses
 * the rewriter's constOf, canonOf, onlyReported, straight, addSite-like records and randomID.
 */
const BT = "`";

export const GO_HELPERS = `
// tableHelper: one method of a named table type that compares two fields of each row.
type tableHelper struct {
	file     string
	typ      string
	method   string
	st       *ast.StructType
	ifs      *ast.IfStmt
	key      ast.Expr
	val      string
	cmp      [2]string
	reported map[string]bool
	once     bool
	at       string
}

type pkgFile struct {
	path string
	fset *token.FileSet
	file *ast.File
	src  []byte
}

func pkgOf(f pkgFile) string {
	dir := ""
	if i := strings.LastIndexByte(f.path, '/'); i >= 0 {
		dir = f.path[:i]
	}
	return dir + ":" + f.file.Name.Name
}

// concurrent: a file that starts goroutines or parallel tests (a package variable would race).
func concurrent(f *ast.File) bool {
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if _, is := n.(*ast.GoStmt); is {
			found = true
		}
		if s, is := n.(*ast.SelectorExpr); is && s.Sel.Name == "Parallel" {
			found = true
		}
		return !found
	})
	return found
}

// tableTypes: the file's ${BT}type T []struct{…}${BT} declarations.
func tableTypes(f *ast.File) map[string]*ast.StructType {
	out := map[string]*ast.StructType{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			if arr, ok := ts.Type.(*ast.ArrayType); ok && arr.Len == nil {
				if st, ok := arr.Elt.(*ast.StructType); ok {
					out[ts.Name.Name] = st
				}
			}
		}
	}
	return out
}

// helperOf: fn as a table helper of one of types, or nil.
func helperOf(fn *ast.FuncDecl, types map[string]*ast.StructType) *tableHelper {
	if fn.Recv == nil || len(fn.Recv.List) != 1 || len(fn.Recv.List[0].Names) != 1 || fn.Body == nil || len(fn.Body.List) != 1 {
		return nil
	}
	recv := fn.Recv.List[0].Names[0].Name
	typ, ok := fn.Recv.List[0].Type.(*ast.Ident)
	rng, ok2 := fn.Body.List[0].(*ast.RangeStmt)
	if !ok || !ok2 || types[typ.Name] == nil || rng.Tok != token.DEFINE || len(rng.Body.List) != 1 {
		return nil
	}
	x, ok := rng.X.(*ast.Ident)
	val, ok2 := rng.Value.(*ast.Ident)
	ifs, ok3 := rng.Body.List[0].(*ast.IfStmt)
	if !ok || !ok2 || !ok3 || x.Name != recv || rng.Key == nil || ifs.Init != nil || ifs.Else != nil {
		return nil
	}
	uses := 0
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if id, is := n.(*ast.Ident); is && id.Name == recv {
			uses++
		}
		return true
	})
	b, ok := unparen(ifs.Cond).(*ast.BinaryExpr)
	if uses != 1 || !ok || b.Op != token.NEQ {
		return nil
	}
	h := &tableHelper{typ: typ.Name, method: fn.Name.Name, st: types[typ.Name], ifs: ifs, key: rng.Key,
		val: val.Name, reported: map[string]bool{}, once: straight(rng.Body, ifs)}
	for i, side := range []ast.Expr{b.X, b.Y} {
		s, is := side.(*ast.SelectorExpr)
		if !is {
			return nil
		}
		if v, is := s.X.(*ast.Ident); !is || v.Name != val.Name {
			return nil
		}
		h.cmp[i] = s.Sel.Name
	}
	lit := &ast.CompositeLit{Type: &ast.ArrayType{Elt: h.st}}
	for _, f := range h.st.Fields.List {
		for _, n := range f.Names {
			if _, _, basicField := fieldOf(lit, n.Name); basicField && onlyReported(rng.Body, val.Name, n.Name, map[ast.Node]bool{b: true}) {
				h.reported[n.Name] = true
			}
		}
	}
	if h.cmp[0] == h.cmp[1] || !h.reported[h.cmp[0]] || !h.reported[h.cmp[1]] {
		return nil
	}
	return h
}

// rowValue: the expression a row gives field name (nil where it gives none: the zero value).
func rowValue(row *ast.CompositeLit, pos int, name string) ast.Expr {
	for i, f := range row.Elts {
		if kv, is := f.(*ast.KeyValueExpr); is {
			if k, is := kv.Key.(*ast.Ident); is && k.Name == name {
				return kv.Value
			}
		} else if i == pos {
			return f
		}
	}
	return nil
}

// helperCall: the rows of a graded test's call statement ${BT}T{…}.method(…)${BT} of helper h, or nil.
func helperCall(st ast.Stmt, h *tableHelper) []*ast.CompositeLit {
	es, ok := st.(*ast.ExprStmt)
	if !ok {
		return nil
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok {
		return nil
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != h.method {
		return nil
	}
	lit, ok := sel.X.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	if t, is := lit.Type.(*ast.Ident); !is || t.Name != h.typ {
		return nil
	}
	var rows []*ast.CompositeLit
	for _, el := range lit.Elts {
		row, is := el.(*ast.CompositeLit)
		if !is || row.Type != nil {
			return nil
		}
		rows = append(rows, row)
	}
	hasFunc := false
	ast.Inspect(call, func(n ast.Node) bool {
		_, is := n.(*ast.FuncLit)
		hasFunc = hasFunc || is
		return !hasFunc
	})
	if hasFunc || len(rows) == 0 {
		return nil
	}
	return rows
}

// expectedRows: each row's constant of field name as the emitter renders it, or ok false.
func expectedRows(h *tableHelper, rows []*ast.CompositeLit, name string) ([]map[string]any, bool) {
	pos, typ, ok := fieldOf(&ast.CompositeLit{Type: &ast.ArrayType{Elt: h.st}}, name)
	if !ok {
		return nil, false
	}
	var out []map[string]any
	for _, row := range rows {
		v := rowValue(row, pos, name)
		if v == nil {
			out = append(out, zeroCanon(typ))
			continue
		}
		c, is := constOf(v)
		if !is {
			return nil, false
		}
		cn, is := canonOf(c)
		if !is || (typ != "float64" && cn["t"] == "float") {
			return nil, false
		}
		out = append(out, cn)
	}
	return out, true
}
`;
