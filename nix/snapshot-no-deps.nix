# What a snapshot's dependency step adds when there is nothing to vendor (nix/snapshot-deps/*.nix):
# no derivation arguments, files, setup, install commands or image contents.
{
  drvArgs = { };
  passAsFile = [ ];
  setup = "";
  gitExclude = [ ];
  install = "";
  imageDirs = [ ];
  imageEnv = { };
  passthru = { };
}
