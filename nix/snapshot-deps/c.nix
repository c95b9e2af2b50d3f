# C: no package manager, nothing to vendor; the install commands (e.g. `make`) run offline.
_: _: {
  kind = "none";
  drvArgs = { };
  passAsFile = [ ];
  setup = "";
  gitExclude = [ ];
  install = "";
  imageDirs = [ ];
  imageEnv = { };
  passthru = { };
}
