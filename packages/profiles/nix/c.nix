# Profile `c` (profiles.json): GCC and Clang, make, cmake (with ctest), ninja and valgrind.
# gcc comes before clang, so `cc`/`c++` are GCC; `clang`/`clang++` are there by name.
pkgs: {
  packages = [
    pkgs.gcc
    pkgs.clang
    pkgs.gnumake
    pkgs.cmake
    pkgs.ninja
    pkgs.pkg-config
  ]
  ++ (
    if pkgs.stdenv.hostPlatform.isLinux then
      [
        pkgs.valgrind
        pkgs.gdb
      ]
    else
      [ ]
  );
  toolSmoke = [
    "clang --version"
    "cmake --version"
    "ctest --version"
    "ninja --version"
  ]
  ++ (if pkgs.stdenv.hostPlatform.isLinux then [ "valgrind --version" ] else [ ]);
  # gcc and clang both ship cc, c++ and binutils links; the first listed wins.
  ignoreCollisions = true;
  env = { };
}
