# Profile `node` (profiles.json): Node LTS with npm, pnpm, yarn, eslint and prettier.
pkgs: {
  packages = [
    pkgs.nodejs_24
    pkgs.pnpm
    pkgs.yarn
    pkgs.typescript
    pkgs.eslint
    pkgs.prettier
  ];
  toolSmoke = [
    "pnpm --version"
    "yarn --version"
    "tsc --version"
    "eslint --version"
    "prettier --version"
  ];
  env = { };
}
