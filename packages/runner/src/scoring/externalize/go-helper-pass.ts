/**
 * The Go rewriter's pass over table helpers across a package's files (go-helpers.ts reads one
 * helper and one call): which field each call expects, the edits in the helper's file and in its
 * callers' files, and one site per row of each rewritten call. Go text composed into GO_REWRITER.
 */
export const GO_HELPER_PASS = String.raw`
// helperPlan: the edits per file path, the sites, and the site count per graded test of every
// table helper of the files called from graded tests' bodies; suffixes are the files' emitter
// suffixes. A package with goroutines or parallel tests is left as written.
type helperPlan struct {
	edits map[string][]edit
	sites []site
	count map[string]int
}

func planHelpers(files []inFile, graded map[string]bool, suffixes map[string]string) helperPlan {
	plan := helperPlan{edits: map[string][]edit{}, count: map[string]int{}}
	byPkg := map[string][]pkgFile{}
	for _, f := range files {
		if !strings.HasSuffix(f.Path, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f.Path, f.Text, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		pf := pkgFile{path: f.Path, fset: fset, file: file, src: []byte(f.Text)}
		byPkg[pkgOf(pf)] = append(byPkg[pkgOf(pf)], pf)
	}
	for _, pfs := range byPkg {
		types := map[string]*ast.StructType{}
		busy := false
		for _, pf := range pfs {
			busy = busy || concurrent(pf.file)
			for k, v := range tableTypes(pf.file) {
				types[k] = v
			}
		}
		if busy {
			continue
		}
		for _, hf := range pfs {
			for _, d := range hf.file.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				if h := helperOf(fn, types); h != nil {
					h.file = hf.path
					plan.add(h, hf, pfs, graded, suffixes[hf.path])
				}
			}
		}
	}
	return plan
}

type helperCallSite struct {
	pf   pkgFile
	test string
	st   ast.Stmt
	rows []*ast.CompositeLit
}

// add plans helper h (defined in hf): its graded calls expecting the field more of them give as
// constants, each such call wrapped, its rows' expected and reported constants out.
func (p *helperPlan) add(h *tableHelper, hf pkgFile, pfs []pkgFile, graded map[string]bool, suffix string) {
	var calls []helperCallSite
	for _, pf := range pfs {
		for _, d := range pf.file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !graded[fn.Name.Name] {
				continue
			}
			for _, st := range fn.Body.List {
				if rows := helperCall(st, h); rows != nil {
					calls = append(calls, helperCallSite{pf, fn.Name.Name, st, rows})
				}
			}
		}
	}
	side, best := 0, -1
	for i := 1; i >= 0; i-- {
		n := 0
		for _, c := range calls {
			if _, ok := expectedRows(h, c.rows, h.cmp[i]); ok {
				n++
			}
		}
		if n > best {
			side, best = i, n
		}
	}
	if best <= 0 {
		return
	}
	exp, got := h.cmp[side], h.cmp[1-side]
	h.at = "_fgAt" + randomID()[:8]
	for _, c := range calls {
		cans, ok := expectedRows(h, c.rows, exp)
		if !ok {
			continue
		}
		p.call(h, c, cans, exp, got)
	}
	p.helper(h, hf, got, suffix)
}

// call: the call wrapped so the helper knows its test and rows' sites; the rows' expected and
// reported constants out.
func (p *helperPlan) call(h *tableHelper, c helperCallSite, cans []map[string]any, exp, got string) {
	off := func(n token.Pos) int { return c.pf.fset.Position(n).Offset }
	ids := []string{strconv.Quote(c.test)}
	count := "any"
	if h.once {
		count = "one"
	}
	for _, cn := range cans {
		id := randomID()
		p.sites = append(p.sites, site{Site: id, Test: c.test, Kind: "eq", Expected: cn, Opts: map[string]any{}, Count: count})
		ids = append(ids, strconv.Quote(id))
	}
	p.count[c.test] += len(cans)
	lit := &ast.CompositeLit{Type: &ast.ArrayType{Elt: h.st}}
	for name := range h.reported {
		pos, typ, _ := fieldOf(lit, name)
		for _, row := range c.rows {
			v := rowValue(row, pos, name)
			if _, isConst := constOf(v); v != nil && name != got && (name == exp || isConst) {
				p.edits[c.pf.path] = append(p.edits[c.pf.path], edit{off(v.Pos()), off(v.End()), "*new(" + typ + ")"})
			}
		}
	}
	head := "func() { " + h.at + " = []string{" + strings.Join(ids, ", ") + "}; defer func() { " + h.at + " = nil }(); "
	p.edits[c.pf.path] = append(p.edits[c.pf.path],
		edit{off(c.st.Pos()), off(c.st.Pos()), head}, edit{off(c.st.End()), off(c.st.End()), " }()"})
}

// helper: the helper's comparison emits the row's computed field where a call set its sites.
func (p *helperPlan) helper(h *tableHelper, hf pkgFile, got, suffix string) {
	off := func(n token.Pos) int { return hf.fset.Position(n).Offset }
	idx := "_fgi" + suffix
	if k, is := h.key.(*ast.Ident); is && k.Name != "_" {
		idx = k.Name
	} else {
		p.edits[hf.path] = append(p.edits[hf.path], edit{off(h.key.Pos()), off(h.key.End()), idx})
	}
	cond := string(hf.src[off(h.ifs.Cond.Pos()):off(h.ifs.Cond.End())])
	emit := "_fgEmit" + suffix + "(" + h.at + "[1+" + idx + "], " + h.at + "[0], (" + h.val + "." + got + "))"
	p.edits[hf.path] = append(p.edits[hf.path],
		edit{off(h.ifs.Cond.Pos()), off(h.ifs.Cond.End()), "(" + h.at + " == nil && (" + cond + ")) || (" + h.at + " != nil && " + emit + ")"},
		edit{len(hf.src), len(hf.src), "\nvar " + h.at + " []string\n"})
}
`;
