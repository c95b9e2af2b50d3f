# Profile `python` (profiles.json): CPython with pip, poetry, pdm and pytest.
pkgs: {
  packages = [
    (pkgs.python3.withPackages (ps: [
      ps.pip
      ps.pytest
      ps.virtualenv
    ]))
    pkgs.poetry
    pkgs.pdm
  ];
  toolSmoke = [
    "python3 -m pip --version"
    "pytest --version"
    "poetry --version"
    "pdm --version"
  ];
  env = {
    PYTHONDONTWRITEBYTECODE = "1";
  };
}
