/**
 * The Go rewriter's reading of fuzz seeds (go-source.ts composes it into GO_REWRITER): a graded
 * `FuzzX(f *testing.F)` whose seed cases (`FuzzX/seed#i`, one per top-level `f.Add`) are graded
 * checks a property in the function it passes to `f.Fuzz` (go-humanize's `if gotNoCommas !=
 * strconv.FormatInt(v, 10)`): both sides are computed from the seed, so there is no value to hide;
 * each top-level `if a != b` there emits both sides in a seed case and the host compares them (a
 * pair per seed), so a forged report or a patched test no longer decides. Any other case (a corpus
 * file, a fuzzing run) compares as written. Go text; it uses the rewriter's constOf, straight,
 * unparen and randomID.
 */
const BT = "`";

export const GO_FUZZ = `
// fuzzSeeds: the pair sites of a graded fuzz test's seed cases (see go-fuzz.ts).
func (r *rewriter) fuzzSeeds(graded map[string]bool) {
	fn := r.fn
	params := fn.Type.Params.List
	if !strings.HasPrefix(fn.Name.Name, "Fuzz") || len(params) != 1 || len(params[0].Names) != 1 {
		return
	}
	f := params[0].Names[0].Name
	adds, lit := fuzzParts(fn, f)
	if lit == nil || adds == 0 || len(lit.Type.Params.List) == 0 || len(lit.Type.Params.List[0].Names) == 0 {
		return
	}
	t := lit.Type.Params.List[0].Names[0].Name
	var seeds []string
	for i := 0; i < adds; i++ {
		if id := fn.Name.Name + "/seed#" + strconv.Itoa(i); graded[id] {
			seeds = append(seeds, id)
		}
	}
	if len(seeds) == 0 || t == "_" {
		return
	}
	count := "any"
	if straight(lit.Body, nil) {
		count = "one"
	}
	for _, st := range lit.Body.List {
		ifs, ok := st.(*ast.IfStmt)
		if !ok || ifs.Init != nil {
			continue
		}
		b, ok := unparen(ifs.Cond).(*ast.BinaryExpr)
		if !ok || b.Op != token.NEQ {
			continue
		}
		_, cx := constOf(b.X)
		_, cy := constOf(b.Y)
		if cx || cy {
			continue
		}
		var ids []string
		for _, s := range seeds {
			id := randomID()
			r.sites = append(r.sites, site{Site: id, Test: s, Kind: "eq", Opts: map[string]any{}, Count: count, Pair: true})
			ids = append(ids, strconv.Quote(s)+": "+strconv.Quote(id))
		}
		call := "_fgPair" + r.suffix + "(map[string]string{" + strings.Join(ids, ", ") + "}, " + t + ".Name(), (" + r.text(b.X) + "), (" + r.text(b.Y) + "))"
		r.edits = append(r.edits, edit{r.off(ifs.Cond.Pos()), r.off(ifs.Cond.End()), call})
	}
}

// fuzzParts: how many top-level ${BT}f.Add${BT} calls fn's body makes (0 where f.Add appears anywhere
// else: a loop's seeds are numbered at run time) and the function literal it passes to f.Fuzz.
func fuzzParts(fn *ast.FuncDecl, f string) (int, *ast.FuncLit) {
	adds, total := 0, 0
	var lit *ast.FuncLit
	isF := func(e ast.Expr) bool { x, is := e.(*ast.Ident); return is && x.Name == f }
	for _, st := range fn.Body.List {
		es, ok := st.(*ast.ExprStmt)
		if !ok {
			continue
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok {
			continue
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && isF(sel.X) {
			if sel.Sel.Name == "Add" {
				adds++
			} else if sel.Sel.Name == "Fuzz" && len(call.Args) == 1 {
				lit, _ = call.Args[0].(*ast.FuncLit)
			}
		}
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if s, is := n.(*ast.SelectorExpr); is && s.Sel.Name == "Add" && isF(s.X) {
			total++
		}
		return true
	})
	if total != adds {
		return 0, nil
	}
	return adds, lit
}
`;
