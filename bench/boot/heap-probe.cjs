// Preloaded into the Cline core by `npm run bench -- boot` (NODE_OPTIONS=--require): every second,
// the core's own process.memoryUsage() (V8 heap, external, RSS) is written to the file named by
// FLAKEGYM_BENCH_HEAP_FILE, so the bench reads the heap the bundle's source string sits in.
// Only the core writes (the supervisor runs the same Node with the same environment).
const { writeFileSync } = require("node:fs");
const file = process.env.FLAKEGYM_BENCH_HEAP_FILE;
if (file && /cline-core\.js$/.test(process.argv[1] ?? "")) {
  const write = () => {
    try {
      writeFileSync(file, JSON.stringify(process.memoryUsage()));
    } catch {
      // the bench removed the directory; the core is being stopped
    }
  };
  setInterval(write, 1000).unref();
}
