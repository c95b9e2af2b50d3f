"""Inspects a docker-archive stream on stdin (what a `dockerTools.streamLayeredImage` script
writes) against an expectation file, the way a registry would see the image:

  repoTag      the one RepoTags entry of manifest.json
  entrypoint   config.Entrypoint
  labels       every expected label present with its value in config.Labels
  clineLayer   one layer holding exactly this store path and nothing else (the shared layer)
  requiredFiles  paths (relative to /) present in some layer

Usage: <image-script> | python3 check-image.py EXPECT.json
Prints one line per check to stderr; on success prints the Cline layer's digest to stdout (so
several images' checks can be compared) and exits 0; exits 1 naming every failed check.
"""

import json
import sys
import tarfile


def scan_layer(fileobj):
    """Top-level store paths and other (non-store) entry names of one layer tarball."""
    roots, others = set(), set()
    with tarfile.open(fileobj=fileobj, mode="r|") as layer:
        for member in layer:
            name = member.name.lstrip("/")
            if name.startswith("./"):
                name = name[2:]
            name = name.rstrip("/")
            parts = name.split("/")
            if len(parts) >= 3 and parts[0] == "nix" and parts[1] == "store":
                roots.add("/nix/store/" + parts[2])
            elif name not in ("", "nix", "nix/store"):
                others.add(name)
    return roots, others


def read_archive(stream):
    layers, jsons, manifest = {}, {}, None
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        for member in archive:
            if member.name.endswith("/layer.tar"):
                layers[member.name] = scan_layer(archive.extractfile(member))
            elif member.name == "manifest.json":
                manifest = json.load(archive.extractfile(member))
            elif member.name.endswith(".json"):
                jsons[member.name] = json.load(archive.extractfile(member))
    return layers, jsons, manifest


def main():
    if len(sys.argv) != 2:
        print("usage: <image-script> | check-image.py EXPECT.json", file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        expect = json.load(f)

    layers, jsons, manifest = read_archive(sys.stdin.buffer)
    failures = []

    def check(name, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", file=sys.stderr)
        if not ok:
            failures.append(f"{name}: {detail}")

    if not manifest or not isinstance(manifest, list) or len(manifest) != 1:
        print("FAIL manifest.json: missing or not a one-image manifest", file=sys.stderr)
        return 1
    image = manifest[0]
    config = jsons.get(image.get("Config"), {}).get("config")
    if config is None:
        print(f"FAIL config: {image.get('Config')} not found in the archive", file=sys.stderr)
        return 1

    tags = image.get("RepoTags", [])
    check("repoTag", tags == [expect["repoTag"]], f"expected {[expect['repoTag']]}, got {tags}")
    entry = config.get("Entrypoint")
    check("entrypoint", entry == expect["entrypoint"], f"expected {expect['entrypoint']}, got {entry}")

    labels = config.get("Labels") or {}
    for key, value in sorted(expect.get("labels", {}).items()):
        check(f"label {key}", labels.get(key) == value, f"expected {value!r}, got {labels.get(key)!r}")

    missing_layers = [p for p in image.get("Layers", []) if p not in layers]
    check("layers", not missing_layers, f"{len(layers)} layers; manifest names absent: {missing_layers}")

    cline = expect["clineLayer"]
    holding = [(name, roots) for name, (roots, _) in layers.items() if cline in roots]
    alone = [name for name, roots in holding if roots == {cline}]
    if alone:
        check("clineLayer", True, f"{cline} is alone in layer {alone[0]}")
    elif holding:
        others = sorted(holding[0][1] - {cline})
        check("clineLayer", False, f"{cline} shares layer {holding[0][0]} with {others}")
    else:
        check("clineLayer", False, f"{cline} is in no layer")

    present = set().union(*(others for _, others in layers.values())) if layers else set()
    for path in expect.get("requiredFiles", []):
        rel = path.lstrip("/").rstrip("/")
        check(f"file /{rel}", rel in present, "present" if rel in present else "missing from every layer")

    if failures:
        print(f"{len(failures)} image check(s) failed:", file=sys.stderr)
        for f in failures:
            print(f"  - {f}", file=sys.stderr)
        return 1
    print("sha256:" + alone[0].split("/")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
