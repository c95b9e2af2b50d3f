# Check: stream an image and inspect what a registry would see: its tag, entrypoint and labels,
# that the Cline core is a layer of its own, and any files a snapshot image must carry. The
# inspection is check-image.py; the output file holds the Cline layer's digest, which
# cline-layer-shared.nix compares across images.
{ pkgs, util }:
{
  image,
  requiredFiles ? [ ],
}:
let
  expect = {
    repoTag = "${image.imageName}:${image.imageTag}";
    entrypoint = [ image.entrypoint ];
    inherit (image) labels clineLayer;
    inherit requiredFiles;
  };
in
pkgs.runCommand "flakegym-image-check-${util.storeName image.imageName}"
  {
    nativeBuildInputs = [ pkgs.python3 ];
    expect = builtins.toJSON expect;
    passAsFile = [ "expect" ];
  }
  ''
    ${image} | python3 ${./check-image.py} "$expectPath" > $out
    echo "${image.imageName}: cline layer $(cat $out)"
  ''
