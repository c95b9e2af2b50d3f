# dockerTools of the stand-in nixpkgs: streamLayeredImage (a script streaming a docker-archive,
# stream-image.py) and the small packages images hold. The layers come from the contents' closure
# (exportReferencesGraph) as the flake's layeringPipeline asks (stream-image.py `plan`); the last,
# customisation layer is the contents symlinked into / plus extraCommands.
{
  withFormals,
  mkDrv,
  python3,
  bashInteractive,
  cacert,
  coreutils,
}:
let
  lower =
    s:
    builtins.replaceStrings
      [ "A" "B" "C" "D" "E" "F" "G" "H" "I" "J" "K" "L" "M" "N" "O" "P" "Q" "R" "S" "T" "U" "V" "W" "X" "Y" "Z" ]
      [ "a" "b" "c" "d" "e" "f" "g" "h" "i" "j" "k" "l" "m" "n" "o" "p" "q" "r" "s" "t" "u" "v" "w" "x" "y" "z" ]
      s;
  streamer = ./stream-image.py;
  files =
    name: script:
    mkDrv {
      inherit name;
      buildCommand = script;
    };
in
{
  streamLayeredImage = withFormals "dockerTools.streamLayeredImage" (
    args@{ name, ... }:
    let
      tag = args.tag or null;
      fromImage = args.fromImage or null;
      contents = args.contents or [ ];
      # Every image the stand-in builds says so: its toolchains are copies of the build machine's
      # tools under nixpkgs' names, not nixpkgs' builds (docs/reference/nix.md).
      config =
        let
          given = args.config or { };
        in
        given // { Labels = (given.Labels or { }) // { "org.flakegym.nixpkgs" = "standin"; }; };
      created = args.created or "1970-01-01T00:00:01Z";
      maxLayers = args.maxLayers or 100;
      extraCommands = args.extraCommands or "";
      passthru = args.passthru or { };
      layeringPipeline = args.layeringPipeline or null;
    in
    assert fromImage == null || throw "stand-in streamLayeredImage: fromImage is not supported";
    let
      imageName = lower name;
      # The layer plan, the customisation layer and the image config; its output hash is the tag
      # (as nixpkgs' conf.json).
      conf = mkDrv {
        name = "${baseNameOf imageName}-conf";
        inherit contents extraCommands;
        exportReferencesGraph = builtins.concatLists (
          builtins.genList (i: [
            "graph${toString i}"
            (builtins.elemAt contents i)
          ]) (builtins.length contents)
        );
        pipeline = builtins.toJSON (if layeringPipeline == null then [ [ "limit_layers" (maxLayers - 1) ] ] else layeringPipeline);
        imageConfig = builtins.toJSON config;
        passAsFile = [
          "pipeline"
          "imageConfig"
        ];
        inherit created;
        buildCommand = ''
          mkdir -p $out/customisation
          linkTree $out/customisation ignore $contents
          (cd $out/customisation && eval "$extraCommands")
          graphs=$(ls graph* 2>/dev/null || true)
          ${python3}/bin/python3 ${streamer} plan "$pipelinePath" $graphs > $out/layers.json
          tag=$(basename $out | cut -c1-32)
          ${python3}/bin/python3 - "$imageConfigPath" "$out" "$tag" <<'PY'
          import json, sys
          config = json.load(open(sys.argv[1]))
          out, tag = sys.argv[2], sys.argv[3]
          conf = {
              "layers": json.load(open(out + "/layers.json")),
              "customisation": out + "/customisation",
              "config": config,
              "created": "${created}",
              "mtime": 1,
              "repoTag": "${imageName}:" + ("${if tag == null then "" else tag}" or tag),
              "architecture": "amd64",
          }
          json.dump(conf, open(out + "/conf.json", "w"), sort_keys=True)
          PY
        '';
      };
      # The result is the script itself: `./result | podman load`.
      drv = mkDrv {
        name = "stream-${baseNameOf imageName}";
        buildCommand = ''
          printf '#!%s\nexec %s %s %s\n' ${bashInteractive}/bin/bash ${python3}/bin/python3 ${streamer} ${conf}/conf.json > $out
          chmod +x $out
        '';
      };
    in
    drv
    // passthru
    // {
      inherit imageName;
      imageTag = if tag != null then tag else builtins.substring 11 32 conf.outPath;
      isExe = true;
    }
  );

  binSh = files "bin-sh" "mkdir -p $out/bin && ln -s ${bashInteractive}/bin/bash $out/bin/sh";
  usrBinEnv = files "usr-bin-env" "mkdir -p $out/usr/bin && ln -s ${coreutils}/bin/env $out/usr/bin/env";
  caCertificates = files "ca-certificates" ''
    mkdir -p $out/etc/ssl/certs
    ln -s ${cacert}/etc/ssl/certs/ca-bundle.crt $out/etc/ssl/certs/ca-bundle.crt
    ln -s ${cacert}/etc/ssl/certs/ca-bundle.crt $out/etc/ssl/certs/ca-certificates.crt
  '';
  fakeNss = files "fake-nss" ''
    mkdir -p $out/etc
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/var/empty:/bin/sh\n' > $out/etc/passwd
    printf 'root:x:0:\nnogroup:x:65534:\n' > $out/etc/group
    printf 'hosts: files dns\n' > $out/etc/nsswitch.conf
  '';
}
