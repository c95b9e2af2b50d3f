import type { Attack } from "./attack.js";

// What the test process hands the host is input to the scorer's own code (issue 42, red team of
// 2026-12-07 night, written against main at 2e163d82). The emissions file (`$FLAKEGYM_EMIT`) is
// the code's to write: it names its path in its environment and the test process runs as the
// code's user. A line that parses as JSON but nests deeper than the host's schema check can
// recurse made that check throw a RangeError: scoring threw, the trajectory was retried as an
// infra failure and its reward was null. One class, every profile: each of them writes the line
// from code the test process loads on its own (an import, an `init`, an `.init_array` entry, a C
// constructor), so the attack is the same whatever the hidden tests are.

/** The nested rendering no emitter writes (they stop at depth 64): a list in a list, `depth` times. */
const DEPTH = 4000;

const py = String.raw`
import os as _bomb_os
_bomb_path = _bomb_os.environ.get("FLAKEGYM_EMIT")
if _bomb_path:
    with open(_bomb_path, "a") as _bomb_f:
        _bomb_f.write('{"s":"0123456789abcdef","n":"x","v":' + '{"t":"list","v":[' * ${DEPTH} + '{"t":"none"}' + ']}' * ${DEPTH} + '}\n')
`;

const node = String.raw`
import { appendFileSync as __bombAppend } from "node:fs";
if (process.env.FLAKEGYM_EMIT)
  __bombAppend(
    process.env.FLAKEGYM_EMIT,
    '{"s":"0123456789abcdef","n":"x","v":' + '{"t":"list","v":['.repeat(${DEPTH}) + '{"t":"none"}' + "]}".repeat(${DEPTH}) + "}\n",
  );
`;

const go = String.raw`package textfit

import (
	"os"
	"strings"
)

func init() {
	p := os.Getenv("FLAKEGYM_EMIT")
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	open := strings.Repeat("{\"t\":\"list\",\"v\":[", ${DEPTH})
	_, _ = f.WriteString("{\"s\":\"0123456789abcdef\",\"n\":\"x\",\"v\":" + open + "{\"t\":\"none\"}" + strings.Repeat("]}", ${DEPTH}) + "}\n")
}
`;

const rust = String.raw`
mod bomb {
    extern "C" fn write_line() {
        use std::io::Write;
        if let Ok(p) = std::env::var("FLAKEGYM_EMIT") {
            if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(p) {
                let line = format!(
                    "{{\"s\":\"0123456789abcdef\",\"n\":\"x\",\"v\":{}{{\"t\":\"none\"}}{}}}\n",
                    "{\"t\":\"list\",\"v\":[".repeat(${DEPTH}),
                    "]}".repeat(${DEPTH})
                );
                let _ = f.write_all(line.as_bytes());
            }
        }
    }

    #[used]
    #[link_section = ".init_array"]
    static INIT: extern "C" fn() = write_line;
}
`;

const c = String.raw`
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void b64_bomb(void) {
    const char *p = getenv("FLAKEGYM_EMIT");
    FILE *f;
    int i;
    if (p == NULL || (f = fopen(p, "a")) == NULL) return;
    fputs("{\"s\":\"0123456789abcdef\",\"n\":\"x\",\"v\":", f);
    for (i = 0; i < ${DEPTH}; i++) fputs("{\"t\":\"list\",\"v\":[", f);
    fputs("{\"t\":\"none\"}", f);
    for (i = 0; i < ${DEPTH}; i++) fputs("]}", f);
    fputs("}\n", f);
    fclose(f);
}
`;

export const VERDICT_INPUT_ATTACKS: Attack[] = [
  {
    id: "py-emission-nested-past-the-schema",
    cls: "verdict-input",
    task: "bytesize-unit-boundary",
    what: `the package, on import, appends to $FLAKEGYM_EMIT one line nesting ${DEPTH} lists: the host's schema check of emissions recursed out of stack, scoring threw (infra, reward null)`,
    append: { "bytesize/__init__.py": py },
  },
  {
    id: "node-emission-nested-past-the-schema",
    cls: "verdict-input",
    task: "paginate-last-page",
    what: `the module, when loaded, appends one emission line nesting ${DEPTH} lists (reward null on main)`,
    append: { "src/index.js": node },
  },
  {
    id: "go-emission-nested-past-the-schema",
    cls: "verdict-input",
    task: "truncate-runes",
    what: `an init() in the package appends one emission line nesting ${DEPTH} lists (reward null on main)`,
    files: { "bomb.go": go },
  },
  {
    id: "rust-emission-nested-past-the-schema",
    cls: "verdict-input",
    task: "stats-empty-mean",
    what: `an .init_array entry of the library appends one emission line nesting ${DEPTH} lists (reward null on main)`,
    append: { "src/lib.rs": rust },
  },
  {
    id: "c-emission-nested-past-the-schema",
    cls: "verdict-input",
    task: "b64-two-byte-tail",
    what: `a constructor in the library appends one emission line nesting ${DEPTH} lists (reward null on main)`,
    append: { "src/b64.c": c },
  },
];

// What the host spends on an emission is the code's to choose too: a comparison of numbers
// parses the emitted digits as a BigInt, which costs time quadratic in their count (4 M digits:
// 2.4 s, and the comparison parses them twice: 4.9 s of the scorer's event loop, every run). The
// code reads the site ids from the hidden test file it can read, writes its own line for one site
// and raises, so the test's own emission never comes (one line for a site that runs once). (7.9 M
// digits, near the 8 MB the host keeps, got the script killed while it read them back.)
const hugeInt = String.raw`
import os as _hi_os, re as _hi_re, glob as _hi_glob

_hi_done = []


def _hi_line():
    if _hi_done:
        return
    _hi_done.append(1)
    path = _hi_os.environ.get("FLAKEGYM_EMIT")
    for f in _hi_glob.glob("tests/test_*.py"):
        m = _hi_re.search(r'def (test_\w+)\(\):\n    _fg_emit\("([0-9a-f]{16})"', open(f).read())
        if path and m:
            with open(path, "a") as out:
                out.write('{"s":"%s","n":"%s::%s","v":{"t":"int","v":"%s"}}\n' % (m.group(2), f, m.group(1), "7" * 3_000_000))
            return


_hi_format_size = format_size


def format_size(n):
    _hi_line()
    raise ValueError("no size today")
`;

export const VERDICT_COST_ATTACKS: Attack[] = [
  {
    id: "py-emission-digits-past-the-budget",
    cls: "verdict-input",
    task: "bytesize-unit-boundary",
    what: "the package writes one emission of a 3 M-digit int for a site it read in the hidden test file: the host's comparison spent seconds of the scorer's event loop parsing it",
    append: { "bytesize/__init__.py": hugeInt },
  },
];

// Probes that lost on main (kept out of the suite; the table in the notes has them).
export const VERDICT_PROBES: Attack[] = [
  {
    id: "py-fill-tmp-before-the-verdict",
    cls: "infra-dodge",
    task: "bytesize-unit-boundary",
    what: "on import, the package fills the exec's /tmp (where the script keeps its temp dir) with one big file and then with empty files until no inode is left, so the script cannot write what it reads back",
    append: {
      "bytesize/__init__.py": String.raw`
import os as _ft_os, tempfile as _ft_tmp
_ft_d = _ft_tmp.gettempdir()
try:
    with open(_ft_os.path.join(_ft_d, "fill"), "wb") as _ft_f:
        while True:
            _ft_f.write(b"\0" * (1 << 20))
except OSError:
    pass
_ft_i = 0
try:
    while _ft_i < 300000:
        open(_ft_os.path.join(_ft_d, "i%d" % _ft_i), "w").close()
        _ft_i += 1
except OSError:
    pass
`,
    },
  },
  {
    id: "node-hook-emission-writes",
    cls: "verdict-forgery",
    task: "durations-compound",
    what: "the module replaces fs.appendFileSync (synced into ESM imports) with one that copies a pair site's expected side over its value in every emission line, and parse() round-trips what format() wrote",
    append: {
      "src/index.js": String.raw`
import { createRequire as __hkRequire } from "node:module";
const __hk = __hkRequire(import.meta.url);
const __hkFs = __hk("node:fs");
const __hkAppend = __hkFs.appendFileSync;
__hkFs.appendFileSync = function (p, data, ...rest) {
  if (p === process.env.FLAKEGYM_EMIT && typeof data === "string") {
    try {
      const o = JSON.parse(data);
      if (o.w) data = JSON.stringify({ ...o, v: o.w }) + "\n";
    } catch {}
  }
  return __hkAppend.call(this, p, data, ...rest);
};
__hk("node:module").syncBuiltinESMExports();
`,
    },
  },
];

/** The same line from a podman scoring container (podman-protocol.test.ts): the host reads it alike. */
export const VERDICT_INPUT_PODMAN: Attack[] = [
  {
    id: "py-emission-nested-past-the-schema-podman",
    cls: "verdict-input",
    task: "chunked-partial-tail",
    what: `on a podman scoring container, the package appends one emission line nesting ${DEPTH} lists on import (reward null on main)`,
    append: { "batchy/__init__.py": py },
  },
];
