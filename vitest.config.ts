import { defineConfig } from "vitest/config";

const pkg = (name: string) => ({
  test: {
    name,
    root: `packages/${name}`,
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    // Loading a real tokenizer in beforeAll takes ~10 s on 2 busy cores (and in the Nix check).
    hookTimeout: 60_000,
    // Deadline tests force garbage collections (a deadline must survive them; see createDeadline).
    execArgv: ["--expose-gc"],
  },
});

/**
 * Heavy suites against real peers (real repositories' mirrors, installs from the registries):
 * `npm run e2e:real` only, never `npm test` (which runs every project listed here).
 */
const realPeers =
  process.env.npm_lifecycle_event === "e2e:real" || process.env.FLAKEGYM_E2E_REAL === "1"
    ? [
        {
          test: {
            name: "e2e-real",
            root: "tests/e2e-real",
            include: ["**/*.test.ts"],
            testTimeout: 3_600_000,
            hookTimeout: 600_000,
            fileParallelism: false,
          },
        },
      ]
    : [];

export default defineConfig({
  test: {
    // Real processes (Cline core, sandboxes, servers) run in tests; 2 cores are the norm here.
    pool: "forks",
    teardownTimeout: 20_000,
    projects: [
      pkg("profiles"),
      pkg("nomad-jobs"),
      pkg("cline-vendor"),
      pkg("runner"),
      {
        // the benchmarks' pure parts (`npm run bench` itself is never a test)
        test: { name: "bench", root: "bench", include: ["test/**/*.test.ts"] },
      },
      {
        test: {
          name: "scripts",
          root: "scripts",
          include: ["test/**/*.test.ts"],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: "integration",
          root: "tests/integration",
          include: ["**/*.test.ts"],
          execArgv: ["--expose-gc"],
          testTimeout: 180_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          // `npm run chaos` (FLAKEGYM_CHAOS=full) for the full scale; a reduced run in `npm test`
          name: "chaos",
          root: "tests/chaos",
          include: ["**/*.test.ts"],
          testTimeout: 900_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: "e2e",
          root: "tests/e2e",
          include: ["**/*.test.ts"],
          testTimeout: 600_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      ...realPeers,
    ],
  },
});
