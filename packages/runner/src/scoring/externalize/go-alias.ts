/**
 * The Go rewriter's reading of a table row's field held in a local (go-source.ts composes it into
 * GO_REWRITER): semver's `e := tc.expected` then `if a != e { t.Errorf(…, e, a) }` compares the
 * row's field as `if a != tc.expected` would. Go text; it uses the rewriter's reporting set.
 */
const BT = "`";

export const GO_ALIAS = `
// aliasOf: the row field a local stands for where an if in a table's range body compares it:
// ${BT}e${BT}, declared by a top-level ${BT}e := tc.want${BT} of that body and assigned only by top-level
// ${BT}e = tc.other${BT} there, read elsewhere only in reports or as the operand of one compared
// top-level if per assignment. The selector of the assignment before the if, and its node (left
// out when the field's other reads are checked); nil where the local is anything else.
func aliasOf(e ast.Expr, val *ast.Ident, body *ast.BlockStmt, ifs *ast.IfStmt) (*ast.SelectorExpr, ast.Node) {
	id, ok := e.(*ast.Ident)
	if !ok || id.Name == "_" || id.Name == val.Name {
		return nil, nil
	}
	at := -1
	var sets []int
	var sels []*ast.SelectorExpr
	assigns := map[ast.Node]bool{}
	for i, s := range body.List {
		if s == ifs {
			at = i
		}
		a, ok := s.(*ast.AssignStmt)
		if !ok || len(a.Lhs) != 1 || len(a.Rhs) != 1 {
			continue
		}
		if l, ok := a.Lhs[0].(*ast.Ident); !ok || l.Name != id.Name {
			continue
		}
		sel, ok := a.Rhs[0].(*ast.SelectorExpr)
		if !ok {
			return nil, nil
		}
		if x, is := sel.X.(*ast.Ident); !is || x.Name != val.Name || (len(sets) == 0) != (a.Tok == token.DEFINE) {
			return nil, nil
		}
		sets, sels = append(sets, i), append(sels, sel)
		assigns[a.Lhs[0]] = true
	}
	cmps, ok := aliasReads(body, id.Name, assigns)
	if !ok || at < 0 || len(sets) == 0 || sets[0] > at {
		return nil, nil
	}
	k := 0
	for i := range sets {
		n := 0
		end := len(body.List)
		if i+1 < len(sets) {
			end = sets[i+1]
		}
		for _, j := range cmps {
			if j > sets[i] && j < end {
				n++
			}
		}
		if n != 1 {
			return nil, nil
		}
		if sets[i] < at {
			k = i
		}
	}
	return sels[k], sels[k]
}

// aliasReads: the indexes of body's top-level ifs whose condition compares the local (an operand
// of its ${BT}!=${BT}); ok false where the local is read, bound or taken anywhere else (reports and the
// assignments aside).
func aliasReads(body *ast.BlockStmt, name string, assigns map[ast.Node]bool) ([]int, bool) {
	ok := true
	operand := map[ast.Node]int{}
	for i, s := range body.List {
		if ifs, is := s.(*ast.IfStmt); is {
			if b, is := unparen(ifs.Cond).(*ast.BinaryExpr); is && b.Op == token.NEQ {
				operand[b.X], operand[b.Y] = i, i
			}
		}
	}
	var cmps []int
	var walk func(n ast.Node, inReport bool)
	walk = func(n ast.Node, inReport bool) {
		ast.Inspect(n, func(m ast.Node) bool {
			if m == nil || !ok {
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
				walk(s.X, inReport)
				return false
			}
			x, is := m.(*ast.Ident)
			if !is || x.Name != name || assigns[m] || inReport {
				return true
			}
			if i, is := operand[m]; is {
				cmps = append(cmps, i)
				return true
			}
			ok = false
			return false
		})
	}
	walk(body, false)
	return cmps, ok
}
`;
