/**
 * PID 1 of a container that only runs commands (a scoring worker): a shell that ignores every
 * catchable signal that ends a process, then waits forever, reaping orphans as it goes.
 *
 * Why it holds against the code under test: inside a PID namespace the kernel drops a signal sent to
 * the namespace's init unless init installed a handler for it (SIGKILL and SIGSTOP included), and
 * this init installs none that ends it (`trap ''` ignores; the shell's own SIGCHLD handler only
 * reaps). `kill 1`, `kill -9 1`, `kill -9 -1` or signalling every visible pid kills the `sleep`
 * child at most, and the loop starts another. Only a SIGKILL from outside the namespace ends it
 * (`podman kill -s KILL`, `podman rm -f`): a container that ended with status 137 was killed from
 * outside (see podman/container-exit.ts `killedFromOutside`). Seen with dash and bash as /bin/sh:
 * every signal below ignored, only SIGCHLD caught; the container outlived every inside attack (tests/integration/workers/podman-worker.test.ts).
 *
 * Nomad's exec jobs have no such idle PID 1: each command is its own allocation, whose PID 1 is the
 * command's shell, and a kill from outside is told by the allocation's events instead
 * (nomad/allocation.ts `killedByNomad`).
 */
export const EXEC_ONLY_INIT_IGNORED = [
  "HUP",
  "INT",
  "QUIT",
  "ILL",
  "TRAP",
  "ABRT",
  "BUS",
  "FPE",
  "USR1",
  "SEGV",
  "USR2",
  "PIPE",
  "ALRM",
  "TERM",
  "TSTP",
  "TTIN",
  "TTOU",
  "XCPU",
  "XFSZ",
  "VTALRM",
  "PROF",
  "IO",
  "PWR",
  "SYS",
] as const;

/** The init's command line: `/bin/sh -c '<ignore every signal>; <wait forever>'`. */
export const EXEC_ONLY_INIT: readonly string[] = [
  "/bin/sh",
  "-c",
  `trap '' ${EXEC_ONLY_INIT_IGNORED.join(" ")}; while :; do sleep 86400 & wait $!; done`,
];
