"""Streams a docker-archive to stdout: the stand-in nixpkgs' dockerTools.streamLayeredImage
(tests/nix/standin-nixpkgs/docker-tools.nix). Usage: stream-image.py <conf.json> (the image, to stdout), or at build time
stream-image.py plan <pipeline.json> <graph file>... (the layers, as JSON, to stdout).

conf.json: {"layers": [[store path, ...], ...], "customisation": dir, "config": {...},
"created": ISO date, "mtime": epoch seconds, "repoTag": "name:tag", "architecture": "amd64"}.
Every layer tar is deterministic: entries sorted, owner 0:0, one mtime, modes reduced to
read/execute (as the store), no inode or hard-link information; so two builds of the same
inputs stream the same bytes and the same digests.
"""

import hashlib
import io
import json
import os
import stat
import sys
import tarfile
import tempfile


def tar_info(name, path, mtime):
    st = os.lstat(path)
    info = tarfile.TarInfo(name)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = mtime
    if stat.S_ISLNK(st.st_mode):
        info.type = tarfile.SYMTYPE
        info.linkname = os.readlink(path)
        info.mode = 0o777
    elif stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
        info.mode = 0o555 if name.startswith("./nix/") else 0o755
    else:
        info.type = tarfile.REGTYPE
        info.size = st.st_size
        info.mode = 0o555 if st.st_mode & 0o111 else 0o444
    return info


def add_tree(tar, root, prefix, mtime):
    """root's entries under prefix, depth first, names sorted."""
    entries = [(prefix, root)]
    while entries:
        name, path = entries.pop(0)
        info = tar_info(name, path, mtime)
        if info.isreg():
            with open(path, "rb") as f:
                tar.addfile(info, f)
        else:
            tar.addfile(info)
        if info.isdir():
            children = sorted(os.listdir(path))
            entries[0:0] = [(f"{name}/{c}", os.path.join(path, c)) for c in children]


def dir_entry(name, mtime, mode=0o755):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    info.mtime = mtime
    return info


def write_layer(paths, custom, mtime):
    """A layer tar in a temp file; returns (file, sha256 hex, size)."""
    tmp = tempfile.TemporaryFile()
    with tarfile.open(fileobj=tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        if custom:
            for c in sorted(os.listdir(custom)):
                add_tree(tar, os.path.join(custom, c), f"./{c}", mtime)
        else:
            tar.addfile(dir_entry("./nix", mtime))
            tar.addfile(dir_entry("./nix/store", mtime))
            for p in sorted(paths):
                add_tree(tar, p, "." + p, mtime)
    size = tmp.tell()
    tmp.seek(0)
    digest = hashlib.sha256()
    for chunk in iter(lambda: tmp.read(1 << 20), b""):
        digest.update(chunk)
    tmp.seek(0)
    return tmp, digest.hexdigest(), size


def add_bytes(out, name, data, mtime):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = mtime
    info.mode = 0o444
    out.addfile(info, io.BytesIO(data))


def read_graph(files):
    """exportReferencesGraph files: path, deriver, count, then that many references; repeated."""
    refs = {}
    for file in files:
        lines = open(file).read().split("\n")
        i = 0
        while i + 2 < len(lines) and lines[i]:
            path, count = lines[i], int(lines[i + 2])
            refs[path] = [r for r in lines[i + 3 : i + 3 + count] if r != path]
            i += 3 + count
    return refs


def plan(pipeline, refs):
    """The layers: `split_paths` ones first (each its own layer), then the rest of the closure by
    popularity (most referenced first, then by path); `limit_layers n` merges the tail into the
    n-th. (nixpkgs' flatten_references_graph, reduced to what the flake's pipeline asks.)"""
    first, limit = [], None
    for op in pipeline or []:
        if op[0] == "split_paths":
            first = list(op[1])
        elif op[0] == "limit_layers":
            limit = op[1]
    popularity = {p: 0 for p in refs}
    for p, rs in refs.items():
        for r in rs:
            popularity[r] = popularity.get(r, 0) + 1
    rest = sorted((p for p in refs if p not in first), key=lambda p: (-popularity[p], p))
    layers = [[p] for p in first] + [[p] for p in rest]
    if limit is not None and len(layers) > limit:
        layers = layers[: limit - 1] + [sorted(p for layer in layers[limit - 1 :] for p in layer)]
    return layers


def main():
    if sys.argv[1] == "plan":
        pipeline = json.load(open(sys.argv[2]))
        json.dump(plan(pipeline, read_graph(sys.argv[3:])), sys.stdout)
        return
    conf = json.load(open(sys.argv[1]))
    mtime = conf["mtime"]
    layers = [(paths, None) for paths in conf["layers"]] + [([], conf["customisation"])]
    out = tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.PAX_FORMAT)
    diff_ids, names = [], []
    for paths, custom in layers:
        f, digest, size = write_layer(paths, custom, mtime)
        name = f"{digest}/layer.tar"
        out.addfile(dir_entry(digest, mtime), None)
        info = tarfile.TarInfo(name)
        info.size = size
        info.mtime = mtime
        info.mode = 0o444
        out.addfile(info, f)
        f.close()
        diff_ids.append(f"sha256:{digest}")
        names.append(name)
    config = {
        "architecture": conf["architecture"],
        "os": "linux",
        "created": conf["created"],
        "config": conf["config"],
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created": conf["created"], "comment": "flakegym stand-in layer"} for _ in diff_ids],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    add_bytes(out, config_name, config_bytes, mtime)
    manifest = [{"Config": config_name, "RepoTags": [conf["repoTag"]], "Layers": names}]
    add_bytes(out, "manifest.json", json.dumps(manifest, sort_keys=True).encode(), mtime)
    out.close()


if __name__ == "__main__":
    main()
