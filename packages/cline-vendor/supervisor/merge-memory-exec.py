# merge-memory-exec.py <program> [args...]: opts this process into the kernel's same-page merging
# (prctl PR_SET_MEMORY_MERGE, Linux >= 6.4; kept across exec and inherited by children), then
# becomes <program>. The launcher starts the Cline core through it (packages/cline-vendor/src/
# memory-merge.ts): identical cores then share identical pages copy-on-write. A refusal by the
# kernel is reported on stderr (the core log) and the program runs unmerged.
import ctypes
import os
import sys

PR_SET_MEMORY_MERGE = 67

if len(sys.argv) < 2:
    sys.stderr.write("usage: merge-memory-exec.py <program> [args...]\n")
    sys.exit(2)
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) != 0:
    err = ctypes.get_errno()
    sys.stderr.write(
        "merge-memory-exec: prctl(PR_SET_MEMORY_MERGE) refused (%s); running without same-page merging\n"
        % os.strerror(err)
    )
os.execv(sys.argv[1], sys.argv[1:])
