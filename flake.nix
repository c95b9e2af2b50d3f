{
  description = "flakegym: scored, token-faithful Cline rollouts in isolated, reproducible sandboxes";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-26.05";
    # Source of catalog task ratatui-2148 ("Add support for vertical gauges"); nix/snapshots/.
    ratatui = {
      url = "github:ratatui/ratatui/527e1df9296e4b6d56dc665788ce558558b480c6";
      flake = false;
    };
  };

  # Wiring only: helpers are one per file under nix/, profiles one per file under
  # packages/profiles/nix/ (their set comes from packages/profiles/profiles.json). docs/reference/nix.md.
  outputs =
    {
      self,
      nixpkgs,
      ratatui,
    }:
    let
      util = import ./nix/util.nix;
      # This flake as a flake reference (its source in the store), for the `rollout` app.
      flakeRef = "path:${self}";
      profileSet = import ./nix/profiles.nix {
        inherit util;
        profilesJson = ./packages/profiles/profiles.json;
        profileDir = ./packages/profiles/nix;
      };
      # ratatui-2148 from its pinned input; every local catalog task from its task.json.
      snapshotSpecs = import ./nix/snapshots/catalog.nix { catalogDir = ./packages/runner/catalog; } // {
        ratatui-2148 = import ./nix/snapshots/ratatui-2148.nix { src = ratatui; };
      };
      linuxSystems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      darwinSystems = [
        "x86_64-darwin"
        "aarch64-darwin"
      ];

      # Everything built for one Linux system.
      linux =
        system:
        let
          pkgs = nixpkgs.legacyPackages.${system};
          nodejs = pkgs.nodejs_24;
          profiles = profileSet.forPkgs pkgs;
          npmPack = import ./nix/npm-pack.nix { inherit pkgs util nodejs; };
          nodeModulesFor = import ./nix/npm-lock-modules.nix { inherit pkgs util npmPack; };
          sourceOf = import ./nix/source.nix { inherit util; };

          cline = import ./nix/cline.nix { inherit pkgs npmPack nodejs; };
          clineOverride = {
            "node_modules/cline" = {
              inherit (cline) version;
              dir = "${cline}/${cline.packageDir}";
            };
          };
          # cline-vendor's supervisor, when this checkout has it (see nix/worker-entrypoint.nix).
          supervisorDir = ./packages/cline-vendor/supervisor;
          supervisor =
            if builtins.pathExists (supervisorDir + "/cline-supervisor.mjs") then
              import ./nix/cline-supervisor.nix {
                inherit pkgs nodejs;
                dir = supervisorDir;
              }
            else
              null;
          entrypoint = import ./nix/worker-entrypoint.nix {
            inherit
              pkgs
              nodejs
              cline
              supervisor
              ;
          };

          runtimeModules = nodeModulesFor {
            name = "flakegym";
            lockFile = ./package-lock.json;
            inherit system;
            overrides = clineOverride;
          };
          devModules = nodeModulesFor {
            name = "flakegym-dev";
            lockFile = ./package-lock.json;
            inherit system;
            includeDev = true;
            overrides = clineOverride;
          };
          runner = import ./nix/runner.nix {
            inherit pkgs util nodejs;
            src = sourceOf { root = ./.; };
            manifest = ./package.json;
            nodeModules = runtimeModules;
          };
          runtimeClosure = import ./nix/runtime-closure.nix { inherit pkgs; } {
            name = "flakegym-runner";
            roots = [ runner ];
          };
          storeOutputs = import ./nix/store-outputs.nix {
            inherit profiles snapshots;
            standin = pkgs ? flakegymStandin;
          };
          rollout = pkgs.writeShellApplication {
            name = "flakegym-rollout";
            # FLAKEGYM_NIX_APP: choose the flake's images by default (docs/reference/nix.md); FLAKEGYM_FLAKE:
            # this flake, for `nix facts` and `images` (a user's own setting wins);
            # FLAKEGYM_STORE_CLOSURE: what the sandboxes bind of the store (the runner's closure).
            # FLAKEGYM_NIX_OUTPUTS: the profiles' toolchains and the tasks' snapshots as store paths
            # (nix/store-outputs.nix), realised by the runner for the tasks it runs.
            text = ''
              export FLAKEGYM_NIX_APP=1
              export FLAKEGYM_NIX_OUTPUTS=${util.escapeShellArg storeOutputs}
              export FLAKEGYM_STORE_CLOSURE=${runtimeClosure}
              export FLAKEGYM_FLAKE="''${FLAKEGYM_FLAKE:-${flakeRef}}"
              exec ${runner}/bin/flakegym rollout "$@"
            '';
          };

          mkImage = import ./nix/image.nix {
            inherit
              pkgs
              nodejs
              cline
              entrypoint
              supervisor
              ;
          };
          images = builtins.mapAttrs (_: profile: mkImage { inherit profile; }) profiles;

          mkSnapshotWorkspace = import ./nix/snapshot-workspace.nix {
            inherit
              pkgs
              util
              nodejs
              nodeModulesFor
              ;
          };
          mkSnapshotImage = import ./nix/snapshot-image.nix { inherit mkImage; };
          mkTaskSnapshotImage = import ./nix/task-snapshot.nix {
            inherit
              profiles
              mkSnapshotImage
              mkSnapshotWorkspace
              system
              ;
          };
          snapshots = builtins.mapAttrs (_: mkTaskSnapshotImage) snapshotSpecs;

          imageCheck = import ./nix/checks/image-metadata.nix { inherit pkgs util; };
          profileImageChecks = util.mapAttrsToList (_: image: {
            name = "image-${image.profile.nixName}";
            value = imageCheck { inherit image; };
          }) images;
          snapshotImageChecks = util.mapAttrsToList (task: image: {
            name = "image-snapshot-${task}";
            value = imageCheck {
              inherit image;
              # A rust snapshot carries its lock, its prebuilt target/ and the cargo source replacement.
              requiredFiles = [
                "workspace/.git/HEAD"
                "flakegym/snapshot.json"
              ]
              ++ (
                if image.profile.id == "rust" then
                  [
                    "workspace/Cargo.lock"
                    "workspace/target/debug"
                    "cargo-home/config.toml"
                  ]
                else
                  [ ]
              );
            };
          }) snapshots;
        in
        {
          inherit
            pkgs
            profiles
            cline
            runner
            rollout
            images
            snapshots
            mkTaskSnapshotImage
            ;
          packages =
            util.mapAttrs' (_: p: {
              name = "${p.nixName}-container";
              value = images.${p.id};
            }) profiles
            // util.mapAttrs' (task: image: {
              name = "snapshot-${task}";
              value = image;
            }) snapshots
            // {
              cline-core = cline;
              flakegym-worker = entrypoint;
            }
            // (if supervisor != null then { cline-supervisor = supervisor; } else { })
            // {
              flakegym-rollout = rollout;
              flakegym = runner;
              default = runner;
            };
          checks =
            builtins.listToAttrs (profileImageChecks ++ snapshotImageChecks)
            // util.mapAttrs' (_: p: {
              name = "smoke-${p.nixName}";
              value = import ./nix/checks/profile-smoke.nix { inherit pkgs util; } p;
            }) profiles
            // {
              cline-layer-shared = import ./nix/checks/cline-layer-shared.nix { inherit pkgs util; } (
                map (c: c.value) (profileImageChecks ++ snapshotImageChecks)
              );
              runner-unit-tests = import ./nix/checks/runner-tests.nix {
                inherit pkgs nodejs;
                src = sourceOf {
                  root = ./.;
                  withTests = true;
                };
                nodeModules = devModules;
              };
              inherit runner;
            };
        };

      perLinux = util.genAttrs linuxSystems linux;
      devShellsFor =
        system:
        let
          pkgs = nixpkgs.legacyPackages.${system};
          profiles = profileSet.forPkgs pkgs;
        in
        util.mapAttrs' (_: p: {
          name = p.nixName;
          value = pkgs.mkShell (
            {
              name = "flakegym-${p.nixName}";
              inherit (p) packages;
            }
            // p.env
          );
        }) profiles
        // {
          # `nix develop`: for working on flakegym itself (Node, the dev-base tools, nixfmt).
          default = pkgs.mkShell {
            name = "flakegym-dev";
            packages = profiles.node.packages ++ [ pkgs.nixfmt ];
          };
        };
    in
    {
      packages = builtins.mapAttrs (_: s: s.packages) perLinux;
      checks = builtins.mapAttrs (_: s: s.checks) perLinux;
      apps = builtins.mapAttrs (_: s: {
        rollout = {
          type = "app";
          program = "${s.rollout}/bin/flakegym-rollout";
          meta.description = "flakegym rollout: run Cline sessions for a task and score them";
        };
        default = {
          type = "app";
          program = "${s.runner}/bin/flakegym";
          meta.description = "the flakegym CLI";
        };
      }) perLinux;
      devShells = util.genAttrs (linuxSystems ++ darwinSystems) devShellsFor;
      formatter = util.genAttrs (linuxSystems ++ darwinSystems) (
        system: nixpkgs.legacyPackages.${system}.nixfmt
      );

      # A snapshot image for any task (rust, go, node, python, c) from its pins (nix/task-snapshot.nix):
      # `lib.mkSnapshotImage { system; task; repo; commit; narHash; profile; install; smoke; }`.
      lib.mkSnapshotImage =
        args: perLinux.${args.system}.mkTaskSnapshotImage (removeAttrs args [ "system" ]);

      # Facts the runner reads with `nix eval --json .#lib.flakegym.<system>` (flake-facts.ts).
      lib.flakegym = builtins.mapAttrs (
        system: s:
        import ./nix/facts.nix {
          inherit system;
          inherit (s)
            profiles
            images
            snapshots
            cline
            ;
        }
      ) perLinux;
    };
}
