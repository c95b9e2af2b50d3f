// A full garbage collection of the Cline core on request (issue 47), loaded into the core with
// `node --require core-gc.cjs cline-core.js`. A reused worker's reset sends the core SIGURG (its
// default action is to ignore: a core started without this file is unharmed); the core then
// collects its whole heap and writes one marker line to stderr (the core's log), so the reset knows
// it is done. A core that serves task after task otherwise keeps each task's garbage: V8 grows the
// heap rather than collect the old generation while it is below its limit (≈ 30 MiB a trajectory).
// The marker holds numbers only. Anyone in the sandbox may send the signal: all it does is a GC.
"use strict";
const v8 = require("node:v8");
const vm = require("node:vm");

// `gc` in a context of its own: --expose-gc on the command line would put it on the core's global
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc");
let seq = 0;
process.on("SIGURG", () => {
  const t0 = process.cpuUsage();
  // core-memory.cjs, when loaded: the first collection (a pooled worker's, when it is ready, before
  // it waits) is V8's low-memory one (it also shrinks the young generation and gives the freed pages
  // back; ≈ 2× a plain one's CPU, paid once a boot); the later ones (a reset's, each trajectory) a
  // plain full collection; both then malloc_trim.
  const trim = process[Symbol.for("flakegym.core.trim")];
  if (typeof trim === "function" && seq === 0) trim(true);
  else {
    gc();
    if (typeof trim === "function") trim(false);
  }
  const used = process.memoryUsage();
  const cpu = process.cpuUsage(t0);
  seq++;
  process.stderr.write(
    `flakegym-core-gc ${seq} heap-used-mib ${(used.heapUsed / 1048576).toFixed(1)} cpu-ms ${((cpu.user + cpu.system) / 1000).toFixed(0)}\n`,
  );
});
