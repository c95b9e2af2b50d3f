# The catalog's local tasks (packages/runner/catalog/<id>/task.json with `source.kind = "local"`)
# as snapshot specs, read from their task.json so the key inputs are the runner's own
# (snapshotSpecOfTask: repo `catalog:<id>`, the source's commit, profile, install, smoke, network)
# and the source is the task's repository directory in this flake.
{ catalogDir }:
let
  ids = builtins.attrNames (builtins.readDir catalogDir);
  taskOf = id: builtins.fromJSON (builtins.readFile (catalogDir + "/${id}/task.json"));
  isLocalTask =
    id:
    (builtins.readDir catalogDir).${id} == "directory"
    && builtins.pathExists (catalogDir + "/${id}/task.json")
    && ((taskOf id).source.kind or "") == "local";
  specOf =
    id:
    let
      t = taskOf id;
    in
    {
      task = id;
      repo = "catalog:${id}";
      inherit (t.source) commit;
      inherit (t) profile install smoke;
      network = t.network or "none";
      src = builtins.path {
        name = "flakegym-catalog-${id}";
        path = catalogDir + "/${id}/${t.source.dir}";
      };
      # what evaluation reads (package.json, Cargo.lock, …): the same files, not their store copy
      readable = catalogDir + "/${id}/${t.source.dir}";
    };
in
builtins.listToAttrs (
  map (id: {
    name = id;
    value = specOf id;
  }) (builtins.filter isLocalTask ids)
)
